/**
 * Whether a pid is a workload's supervisor (the detached `mcpmgr __supervise NAME`), not merely a
 * live process. Everything that acts on a status's pid asks here: `stop` before it signals, `list`
 * and the status readers before they report "running", the gateway before it counts a member.
 */
import { readFileSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { McpmgrPaths } from "./paths.ts";
import { isProcessAlive } from "./process-start.ts";

/** Which mcpmgr home a supervisor must serve: its logs folder tells homes apart. */
export type SupervisorHome = Pick<McpmgrPaths, "logDir">;

/**
 * A workload's proxy log: its supervisor's stdout and stderr for as long as it runs (rotated in
 * place, never renamed: state/log-files.ts), which is what says which home a supervisor serves.
 */
export function proxyLogPathIn(home: SupervisorHome, name: string): string {
  return join(home.logDir, `${name}.proxy.log`);
}

/**
 * After a reboot (or a long uptime) the pid may belong to anything, and stop must never signal a
 * stranger nor a gateway route to one. The process must also be this user's: another local user
 * can start a process whose command line reads `__supervise NAME` and wait for a dead
 * supervisor's pid to come round, to pass for it. And it must serve this home: with two homes
 * (MCPMGR_HOME per project, a test home beside the real one) each holding a workload NAME, the pid
 * of home A's dead supervisor can come round to home B's, and home A's `stop` would stop B's.
 *
 * Off Linux (no /proc) a live pid is taken for the supervisor, as it always was.
 */
export function isSupervisorOf(pid: number, name: string, home: SupervisorHome): boolean {
  if (!isProcessAlive(pid)) return false;
  if (process.platform !== "linux") return true;
  try {
    if (statSync(`/proc/${pid}`).uid !== process.getuid?.()) return false;
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    const at = argv.indexOf("__supervise");
    return at !== -1 && argv[at + 1] === name && servesHome(pid, name, home);
  } catch {
    return false;
  }
}

/**
 * Whether the supervisor's stdout is this home's proxy log for NAME. One readlink in the usual case
 * (`list` asks this of every workload); the folders are compared by inode only when the paths
 * differ as text (a home reached through a symlink). The folder, not the file: a proxy log deleted
 * by hand while its supervisor runs reads `… (deleted)` and has a new inode once written again, and
 * a live supervisor of ours taken for dead would be orphaned, running on with nothing to stop it.
 * For the same reason a logs folder that is gone or renamed (deleted by hand to free space, moved
 * aside) still counts when it was in this home's state folder (logDir is `<stateDir>/logs` wherever
 * /proc exists: state/paths.ts), compared by real path, which needs no folder to exist any more:
 * another home's logs folder is never in this home's state folder. A stdout that is no NAME.proxy.log
 * at all (a supervisor started some other way) says nothing of its home: such a process is taken
 * for ours, as before this check, rather than orphaned.
 */
function servesHome(pid: number, name: string, home: SupervisorHome): boolean {
  let out: string;
  try {
    out = readlinkSync(`/proc/${pid}/fd/1`).replace(/ \(deleted\)$/, "");
  } catch {
    return true;
  }
  const wanted = proxyLogPathIn(home, name);
  if (out === wanted) return true;
  if (!out.endsWith(`/${name}.proxy.log`)) return true;
  const folder = dirname(out);
  return sameFolder(folder, home.logDir) || realPath(dirname(folder)) === realPath(dirname(home.logDir));
}

/** `path` with the symlinks of its longest existing part resolved; the rest, which no longer exists, as written. */
function realPath(path: string): string {
  const parent = dirname(path);
  try {
    return realpathSync(path);
  } catch {
    return parent === path ? path : join(realPath(parent), basename(path));
  }
}

function sameFolder(a: string, b: string): boolean {
  const one = statSync(a, { throwIfNoEntry: false });
  const other = statSync(b, { throwIfNoEntry: false });
  return one !== undefined && other !== undefined && one.dev === other.dev && one.ino === other.ino;
}
