/**
 * What `mcpmgr run SOURCE` names: a protocol-scheme package (npx://, uvx://, go://,
 * remote or a local path), a remote MCP URL, a container image, or a registry entry.
 */
import { isAbsolute, resolve } from "node:path";
import {
  goSpecPattern,
  imageRefPattern,
  npmSpecPattern,
  pypiSpecPattern,
  specExamples,
} from "../config/package-refs.ts";
import { quotableUrl, refuseUrlCredentials } from "../config/url-credentials.ts";
import { McpmgrError } from "../errors.ts";

export type PackageManager = "npx" | "uvx" | "go";

export type ServerSource =
  | {
      readonly kind: "package";
      readonly manager: PackageManager;
      readonly name: string;
      readonly version?: string;
      readonly localPath?: string;
    }
  | { readonly kind: "remote"; readonly url: URL }
  | { readonly kind: "image"; readonly ref: string }
  | { readonly kind: "registry"; readonly name: string };

/**
 * The sources that run a local project, in a hint to a user who gave its path (or its name) alone: said
 * alike by `run ./server.py` here and by `run myproject` (workload/locate.ts).
 */
export function localProjectForms(folder: string): string {
  return `npx://./${folder}, uvx://./${folder} or go://./${folder}`;
}

const schemes: Readonly<Record<string, PackageManager>> = { "npx://": "npx", "uvx://": "uvx", "go://": "go" };

/** `what` names a remote URL in errors: "the server URL" typed, or a registry entry's. */
export function parseSource(text: string, cwd = process.cwd(), what = "the server URL"): ServerSource {
  const input = text.trim();
  if (/^https?:\/\//i.test(input)) {
    let url: URL;
    try {
      url = new URL(input);
    } catch {
      throw new McpmgrError("INVALID_ARGUMENT", `${JSON.stringify(quotableUrl(input))} is not a valid URL`, {
        hint: "write it as https://host/path",
      });
    }
    refuseUrlCredentials(url, what);
    return { kind: "remote", url };
  }
  for (const [prefix, manager] of Object.entries(schemes)) {
    if (!input.startsWith(prefix)) continue;
    const rest = input.slice(prefix.length);
    if (rest === "")
      throw new McpmgrError("INVALID_ARGUMENT", `${prefix} needs a package`, {
        hint: `e.g. ${prefix}${specExamples[manager]}`,
      });
    if (rest.startsWith("./") || rest.startsWith("../") || isAbsolute(rest)) {
      return { kind: "package", manager, name: rest, localPath: resolve(cwd, rest) };
    }
    if (!specPatterns[manager].test(rest)) {
      throw new McpmgrError(
        "INVALID_ARGUMENT",
        `${JSON.stringify(rest)} is not a ${manager === "npx" ? "npm" : manager === "uvx" ? "PyPI" : "Go"} package`,
        {
          hint: `e.g. ${prefix}${specExamples[manager]}; local projects start with ./, ../ or /`,
        },
      );
    }
    return { kind: "package", manager, ...splitVersion(rest, manager) };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(input)) {
    throw new McpmgrError("INVALID_ARGUMENT", `unknown scheme in ${JSON.stringify(quotableUrl(input))}`, {
      hint: "use npx://, uvx://, go://, http(s)://, an image or a registry name",
    });
  }
  // No image reference starts like a path: one that does is a local project without its runner.
  if (/^(\.{1,2}|~)?\//.test(input) || input === "." || input === "..") {
    throw new McpmgrError("INVALID_ARGUMENT", `${JSON.stringify(input)} is a local path, not a server source`, {
      hint: `run a local project with its package runner: ${localProjectForms("dir")} (the project's folder)`,
    });
  }
  // Images have a registry host, a path, a tag or a digest; bare words are registry names.
  if (/[/:@]/.test(input)) {
    if (!imageRefPattern.test(input)) {
      throw new McpmgrError("INVALID_ARGUMENT", `${JSON.stringify(input)} is not a valid image reference`, {
        hint: `e.g. ${specExamples.image}`,
      });
    }
    return { kind: "image", ref: input };
  }
  if (!/^[a-z0-9][a-z0-9._-]*$/i.test(input)) {
    throw new McpmgrError("INVALID_ARGUMENT", `${JSON.stringify(input)} is not a server name, image, package or URL`, {
      hint: "see 'mcpmgr run --help'",
    });
  }
  return { kind: "registry", name: input };
}

const specPatterns: Readonly<Record<PackageManager, RegExp>> = {
  npx: npmSpecPattern,
  uvx: pypiSpecPattern,
  go: goSpecPattern,
};

/** "@scope/pkg@1.2" → name "@scope/pkg", version "1.2"; "pkg" → no version; uvx also "pkg==1.2". */
function splitVersion(spec: string, manager: PackageManager): { name: string; version?: string } {
  const pinned = manager === "uvx" ? spec.indexOf("==") : -1;
  if (pinned > 0) return { name: spec.slice(0, pinned), version: spec.slice(pinned + 2) };
  const at = spec.lastIndexOf("@");
  if (at <= 0 || (manager === "npx" && spec.startsWith("@") && at === 0)) return { name: spec };
  const name = spec.slice(0, at);
  const version = spec.slice(at + 1);
  if (version === "")
    throw new McpmgrError("INVALID_ARGUMENT", `empty version in ${JSON.stringify(spec)}`, {
      hint: "write name@version or leave @ out",
    });
  return { name, version };
}
