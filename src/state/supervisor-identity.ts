/**
 * Whether a pid is a workload's supervisor (the detached `mcpmgr __supervise NAME`), not merely a
 * live process. Everything that acts on a status's pid asks here: `stop` before it signals, `list`
 * and the status readers before they report "running", the gateway before it counts a member.
 */
import { readFileSync, statSync } from "node:fs";
import { isProcessAlive } from "./process-start.ts";

/**
 * After a reboot (or a long uptime) the pid may belong to anything, and stop must never signal a
 * stranger nor a gateway route to one. The process must also be this user's: another local user
 * can start a process whose command line reads `__supervise NAME` and wait for a dead
 * supervisor's pid to come round, to pass for it.
 */
export function isSupervisorOf(pid: number, name: string): boolean {
  if (!isProcessAlive(pid)) return false;
  if (process.platform !== "linux") return true;
  try {
    if (statSync(`/proc/${pid}`).uid !== process.getuid?.()) return false;
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    const at = argv.indexOf("__supervise");
    return at !== -1 && argv[at + 1] === name;
  } catch {
    return false;
  }
}
