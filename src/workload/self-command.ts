/** How this executable starts another copy of itself (source run or compiled binary). */
import { realpathSync } from "node:fs";
import { basename, join } from "node:path";

export function selfCommand(...args: string[]): string[] {
  // In a compiled binary the entry lives in Bun's embedded file system.
  const compiled = Bun.main.startsWith("/$bunfs/") || /^[A-Z]:\\~BUN\\/.test(Bun.main);
  return compiled ? [process.execPath, ...args] : [process.execPath, Bun.main, ...args];
}

/**
 * The same command, for a file that outlives this process (an AI client's entry): the
 * executable by a path that survives an upgrade. Supervisors are started by the real path
 * (that exact version); an entry must not name a Homebrew Cellar folder, which `brew upgrade`
 * removes, when Homebrew's own stable links reach the same file.
 */
export function stableSelfCommand(...args: string[]): string[] {
  const [executable, ...rest] = selfCommand(...args);
  return [stableExecutablePath(executable as string), ...rest];
}

/**
 * `PREFIX/Cellar/FORMULA/VERSION/…/NAME` → `PREFIX/opt/FORMULA/…/NAME` (Homebrew keeps `opt`
 * pointing at the installed version), else `PREFIX/bin/NAME`, whichever exists and still
 * resolves to this very file; any other path as it is.
 */
export function stableExecutablePath(executable: string): string {
  const real = realPath(executable);
  if (real === undefined) return executable;
  const cellar = /^(.*)\/Cellar\/([^/]+)\/[^/]+\/(.+)$/.exec(real);
  if (cellar === null) return executable;
  const [, prefix, formula, inside] = cellar as unknown as [string, string, string, string];
  for (const candidate of [join(prefix, "opt", formula, inside), join(prefix, "bin", basename(real))]) {
    if (realPath(candidate) === real) return candidate;
  }
  return executable;
}

/**
 * The package runner whose folder holds `executable`, if any: npx keeps what it ran in its cache
 * (`…/_npx/HASH/…`, which `npm cache npx rm` or a cleaned cache removes), bunx in a temporary
 * folder (`$TMPDIR/bunx-UID-PACKAGE@VERSION/…`, gone after a reboot). A file that outlives this
 * process and names such a path stops working when that folder goes.
 */
export function packageRunnerOf(executable: string): "npx" | "bunx" | undefined {
  const segments = executable.split(/[\\/]/);
  if (segments.includes("_npx")) return "npx";
  if (segments.some((segment) => segment.startsWith("bunx-"))) return "bunx";
  return undefined;
}

function realPath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}
