/** The command that runs a protocol-scheme package as a local stdio server. */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { McpmgrError } from "../errors.ts";
import type { PackageManager, ServerSource } from "./source.ts";

const toolchains: Readonly<Record<PackageManager, { binary: string; install: string }>> = {
  npx: { binary: "npx", install: "install Node.js (it provides npx): https://nodejs.org or your package manager" },
  uvx: {
    binary: "uvx",
    install: "install uv (it provides uvx): pipx install uv, brew install uv, or your package manager",
  },
  go: { binary: "go", install: "install Go: https://go.dev/dl or your package manager" },
};

export function packageCommand(
  source: Extract<ServerSource, { kind: "package" }>,
  args: readonly string[],
  which = Bun.which,
): string[] {
  const toolchain = toolchains[source.manager];
  const binary = which(toolchain.binary);
  if (binary === null) {
    throw new McpmgrError("TOOLCHAIN_MISSING", `${source.manager}:// needs ${toolchain.binary}, which is not on PATH`, {
      hint: toolchain.install,
    });
  }
  const spec = source.localPath ?? (source.version ? `${source.name}@${source.version}` : source.name);
  switch (source.manager) {
    case "npx":
      // A local project runs in place: npx would copy it into its cache and chmod files there.
      if (source.localPath) {
        const entry = localNodeEntry(source.localPath);
        return [...(interpreterOf(entry, which) ?? [nodeFor(binary, which)]), entry, ...args];
      }
      return [binary, "-y", spec, ...args];
    case "uvx":
      return source.localPath
        ? [binary, "--from", source.localPath, localPythonScript(source.localPath), ...args]
        : [binary, spec, ...args];
    case "go":
      // A local module is run from its own directory (see packageWorkingDir).
      return [binary, "run", source.localPath ? "." : source.version ? spec : `${source.name}@latest`, ...args];
  }
}

function nodeFor(npx: string, which: typeof Bun.which): string {
  return which("node") ?? npx.replace(/npx$/, "node");
}

/** The file a local Node project runs: its (first) bin, else main, else index.js. */
function localNodeEntry(dir: string): string {
  let manifest: { bin?: string | Record<string, string>; main?: string };
  try {
    manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as typeof manifest;
  } catch {
    throw new McpmgrError("INVALID_ARGUMENT", `${dir} has no readable package.json`, {
      hint: "npx:// local paths must point at a Node project directory",
    });
  }
  const bin =
    typeof manifest.bin === "string" ? manifest.bin : manifest.bin ? Object.values(manifest.bin)[0] : undefined;
  const entry = join(dir, bin ?? manifest.main ?? "index.js");
  if (!existsSync(entry))
    throw new McpmgrError("INVALID_ARGUMENT", `${entry} does not exist`, {
      hint: "check the bin or main field of package.json",
    });
  return entry;
}

/** The console script a local Python project declares ([project.scripts] in pyproject.toml). */
export function localPythonScript(dir: string): string {
  let scripts: Record<string, unknown> | undefined;
  try {
    const project = Bun.TOML.parse(readFileSync(join(dir, "pyproject.toml"), "utf8")) as {
      project?: { scripts?: Record<string, unknown> };
    };
    scripts = project.project?.scripts;
  } catch {
    throw new McpmgrError("INVALID_ARGUMENT", `${dir} has no readable pyproject.toml`, {
      hint: "uvx:// local paths must point at a Python project directory",
    });
  }
  const name = scripts ? Object.keys(scripts)[0] : undefined;
  if (name === undefined) {
    throw new McpmgrError("INVALID_ARGUMENT", `${dir}/pyproject.toml declares no [project.scripts] entry`, {
      hint: "add the server's command under [project.scripts]",
    });
  }
  return name;
}

/**
 * The interpreter a script's shebang names (`#!/usr/bin/env bun`, `#!/usr/bin/node`),
 * as npm would honour it when running the bin; undefined without a shebang.
 */
function interpreterOf(file: string, which: typeof Bun.which): string[] | undefined {
  const firstLine = readFileSync(file, "utf8").split("\n", 1)[0] ?? "";
  if (!firstLine.startsWith("#!")) return undefined;
  let words = firstLine.slice(2).trim().split(/\s+/).filter(Boolean);
  if (words[0]?.endsWith("/env")) words = words.slice(1).filter((w) => w !== "-S");
  const [program, ...flags] = words;
  if (program === undefined) return undefined;
  const resolved = program.includes("/") ? program : which(program);
  if (resolved === null)
    throw new McpmgrError("TOOLCHAIN_MISSING", `${file} runs with ${program}, which is not on PATH`, {
      hint: `install ${program}`,
    });
  return [resolved, ...flags];
}

/** The directory a package's command must start in, when not the user's. */
export function packageWorkingDir(source: Extract<ServerSource, { kind: "package" }>): string | undefined {
  return source.manager === "go" ? source.localPath : undefined;
}
