/**
 * Host paths as both runtimes see them: resolved to their real location (symlinks
 * followed) before any decision, and mcpmgr's own directories (secrets, other workloads'
 * records with their -e values, logs, sockets) hidden wherever a mount would show them,
 * under whatever name the mount shows them.
 */
import { mkdirSync, realpathSync } from "node:fs";
import { dirname, isAbsolute, posix, relative, resolve, sep } from "node:path";
import { errorMessage, McpmgrError } from "../errors.ts";
import { evaluatorSocketPath } from "../state/cedar-socket-path.ts";
import { type Env, resolvePaths } from "../state/paths.ts";

/** A mount whose host side is a real path (no symlink in it). */
export interface RealMount {
  readonly hostPath: string;
  readonly targetPath: string;
}

/** The real path of an existing host path; a clear error when it does not exist. */
export function realHostPath(
  path: string,
  what = "mount source",
  hint = "create it, or fix the path in --volume or the permission profile",
): string {
  try {
    return realpathSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException | undefined)?.code;
    if (code === "ENOENT" || code === "ENOTDIR") {
      throw new McpmgrError("INVALID_OPTION", `${what} ${path} does not exist`, { hint });
    }
    throw new McpmgrError("INVALID_OPTION", `cannot resolve ${what} ${path}: ${errorMessage(err)}`, {
      hint: "check the path and its permissions",
      cause: err,
    });
  }
}

/** Whether `inner` is `outer` or below it (both absolute, normalised). */
export function isWithin(inner: string, outer: string): boolean {
  const a = resolve(inner);
  const b = resolve(outer);
  return a === b || a.startsWith(b.endsWith(sep) ? b : `${b}${sep}`);
}

/**
 * mcpmgr's directories as real paths: MCPMGR_HOME itself when set, the config, data, state,
 * runtime and log directories, and the Cedar evaluator's socket folder when a long runtime path
 * puts it in the temporary folder (state/cedar-socket-path.ts; a server reaching that socket could
 * stand in for the evaluator and allow everything). They are created (0700) when missing, so a
 * mount of their parent cannot show one that appears after the server started.
 */
export function mcpmgrProtectedDirs(env: Env = process.env): string[] {
  const paths = resolvePaths(env);
  const home = env.MCPMGR_HOME ? [resolve(env.MCPMGR_HOME)] : [];
  const cedar = dirname(evaluatorSocketPath(paths, process.getuid?.(), env));
  const dirs = [...home, paths.configDir, paths.dataDir, paths.stateDir, paths.runtimeDir, paths.logDir];
  if (!isWithin(cedar, paths.runtimeDir)) dirs.push(cedar);
  const real: string[] = [];
  for (const dir of dirs) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      real.push(realpathSync(dir));
    } catch {
      // Cannot create or resolve it (a read-only parent): nothing of ours can be in it either.
    }
  }
  return [...new Set(real)];
}

/**
 * Where inside the sandbox or container the `protectedDirs` appear through `mounts`: one
 * target path per (mount, directory at or below the mount's real host path). The runtimes
 * put an empty tmpfs over each.
 */
export function hiddenTargets(mounts: readonly RealMount[], protectedDirs: readonly string[]): string[] {
  const hidden = new Set<string>();
  for (const mount of mounts) {
    for (const dir of protectedDirs) {
      if (!isWithin(dir, mount.hostPath)) continue;
      const rel = relative(mount.hostPath, dir);
      hidden.add(rel === "" ? mount.targetPath : posix.join(mount.targetPath, ...rel.split(sep)));
    }
  }
  return [...hidden];
}

/** `~` and relative paths made absolute (relative to `cwd`). */
export function expandHostPath(path: string, home: string, cwd = process.cwd()): string {
  const expanded = path.replace(/^~(?=\/|$)/, home);
  return isAbsolute(expanded) ? resolve(expanded) : resolve(cwd, expanded);
}
