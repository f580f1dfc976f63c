/**
 * Workload names. A name is a folder name, a container name and a DNS label at once, so it
 * follows the strictest of those: RFC 1123 labels, lowercase [a-z0-9-], at most 63
 * characters, no '-' at either end. No '.' or '/' means a name can never climb out of the
 * state folder, and our own files ('.lock', 'x.proxy.log') can never collide with a workload.
 */
import { posix, win32 } from "node:path";
import { McpmgrError } from "../errors.ts";

const NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const MAX_WORKLOAD_NAME_LENGTH = 63;
/** Used when nothing in the source survives sanitising (e.g. "npx://@/"). */
const FALLBACK_WORKLOAD_NAME = "mcp-server";

export function isValidWorkloadName(name: string): boolean {
  return NAME.test(name);
}

/** Guards every store method that turns a name into a path. */
export function assertWorkloadName(name: string): void {
  if (isValidWorkloadName(name)) return;
  const suggestion = sanitizeWorkloadName(name);
  throw new McpmgrError("INVALID_ARGUMENT", `${JSON.stringify(name)} is not a valid workload name`, {
    hint:
      "use lowercase letters, digits and '-', at most 63 characters, not starting or ending with '-'" +
      (suggestion !== "" ? ` (e.g. ${suggestion})` : ""),
  });
}

/** Group names follow the workload names' rule (a group is a label on its workloads and containers). */
export function assertGroupName(name: string): void {
  if (isValidWorkloadName(name)) return;
  throw new McpmgrError("INVALID_ARGUMENT", `${JSON.stringify(name)} is not a valid group name`, {
    hint: "use lowercase letters, digits and '-', at most 63 characters, not starting or ending with '-'",
  });
}

/**
 * Lowercases, folds accents ("Café" → "cafe"), turns every other run of characters into one
 * '-', trims '-' from both ends and cuts to 63. May return "" when nothing usable is left;
 * check with isValidWorkloadName.
 */
export function sanitizeWorkloadName(text: string): string {
  return text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, MAX_WORKLOAD_NAME_LENGTH)
    .replace(/-+$/, "");
}

/**
 * A default name for `run SOURCE` without --name: the part of the source a person would
 * call the server by.
 *   npx://@modelcontextprotocol/server-everything@1.2  → server-everything
 *   uvx://mcp-server-fetch                             → mcp-server-fetch
 *   go://github.com/org/repo/cmd/x@v1                  → x
 *   ghcr.io/org/image:tag                              → image
 *   https://api.example.com/mcp                        → api-example-com
 *   ./local/dir                                        → dir
 *   fetch (a registry name)                            → fetch
 * Generic last parts ("mcp", "server", ...) keep their parent for meaning: "@acme/mcp" → acme-mcp.
 * `cwd` is only read for "." and "..".
 */
export function deriveWorkloadName(source: string, cwd: string = process.cwd()): string {
  const name = sanitizeWorkloadName(_candidate(source.trim(), cwd));
  return name === "" ? FALLBACK_WORKLOAD_NAME : name;
}

const GENERIC = new Set([
  "mcp",
  "server",
  "mcp-server",
  "server-mcp",
  "cli",
  "app",
  "main",
  "src",
  "index",
  "cmd",
  "bin",
]);
/** URL path parts that say nothing about which server it is. */
const GENERIC_URL_PARTS = /^(?:mcp|sse|api|v\d+|messages?|stream|http)$/i;

function _candidate(text: string, cwd: string): string {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text);
  if (scheme !== null) {
    const rest = text.slice(scheme[0].length);
    switch ((scheme[1] ?? "").toLowerCase()) {
      case "http":
      case "https":
        return _fromUrl(text);
      case "npx":
        return _fromNpm(rest);
      case "uvx":
        return _fromPython(rest);
      case "go":
        return _looksLikePath(rest) ? _fromPath(rest, cwd) : _fromGo(rest);
      default:
        return _fromImage(rest);
    }
  }
  if (_looksLikePath(text)) return _fromPath(text, cwd);
  if (text.includes("/") || text.includes(":") || text.includes("@")) return _fromImage(text);
  return text; // a registry name such as "fetch"
}

function _looksLikePath(text: string): boolean {
  return /^(?:\.{1,2}(?:[\\/]|$)|[\\/]|~[\\/]|[A-Za-z]:[\\/])/.test(text);
}

function _fromPath(text: string, cwd: string): string {
  const path = text.includes("\\") ? win32 : posix;
  const base = path.basename(text);
  return base === "." || base === ".." || base === "" ? path.basename(path.resolve(cwd, text)) : base;
}

/** "@scope/pkg@1.2" → pkg; the version '@' is any '@' after the first character. */
function _fromNpm(spec: string): string {
  const bare = /^(@?[^@]*)/.exec(spec)?.[1] ?? spec;
  const parts = bare.split("/").filter((part) => part !== "");
  return _meaningfulTail(parts.map((part) => part.replace(/^@/, "")));
}

/** "mcp-server-fetch==1.0", "pkg[extra]>=2", "pkg@1" → the distribution name (PEP 508). */
function _fromPython(spec: string): string {
  return /^[A-Za-z0-9._-]+/.exec(spec)?.[0] ?? spec;
}

/** "github.com/org/repo/cmd/x@v1" → x; a trailing major-version part (/v2) is skipped. */
function _fromGo(spec: string): string {
  const parts = (spec.split("@")[0] ?? spec).split("/").filter((part) => part !== "" && !/^v\d+$/.test(part));
  return _meaningfulTail(parts);
}

/** "ghcr.io/org/image:tag@sha256:…" → image. A registry's ":port" is never in the last part. */
function _fromImage(ref: string): string {
  const withoutDigest = ref.split("@")[0] ?? ref;
  const parts = withoutDigest.split("/").filter((part) => part !== "");
  const last = parts.length > 0 ? parts.length - 1 : 0;
  return _meaningfulTail(parts.map((part, i) => (i === last ? (part.split(":")[0] ?? part) : part)));
}

/** host (without www.), the port if given, and the path parts that are not boilerplate. */
function _fromUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return text;
  }
  const host = url.hostname.replace(/^www\./, "").replace(/^\[|\]$/g, "");
  const path = url.pathname.split("/").filter((part) => part !== "" && !GENERIC_URL_PARTS.test(part));
  return [host, url.port, ...path].filter((part) => part !== "").join("-");
}

/** The last part, joined with its parent when the last part alone says nothing ("cmd" parents skipped). */
function _meaningfulTail(parts: readonly string[]): string {
  const useful = parts.filter((part) => part.toLowerCase() !== "cmd");
  const last = useful.at(-1) ?? "";
  if (!GENERIC.has(last.toLowerCase()) || useful.length < 2) return last;
  return `${useful.at(-2)}-${last}`;
}
