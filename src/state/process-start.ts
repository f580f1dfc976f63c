/**
 * Whether a pid's process lives, and when it started, to tell a live pid from one reused by
 * another process since: a pid recorded in a file (a lock's holder, a supervisor's status, a
 * gateway's guard marker, a foreground run's claim, a client entry's run) counts only while the
 * process that wrote it lives. Every liveness check asks here (`isProcessAlive`, `isOwnProcessAlive`,
 * `isSameProcess`), so a zombie (ended, not yet collected by its parent) is dead for all of them alike.
 */
import { readFileSync } from "node:fs";

/** Clock ticks since boot on Linux; "" elsewhere (the pid alone is then the identity); undefined when the process is gone. */
export function processStartTime(pid: number): string | undefined {
  return procStat(pid)?.startTime;
}

/** The state letter and start time from `/proc/PID/stat` ("" for both off Linux); undefined when the process is gone. */
function procStat(pid: number): { state: string; startTime: string | undefined } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { state: fields[0] ?? "", startTime: fields[19] };
  } catch {
    return process.platform === "linux" ? undefined : { state: "", startTime: "" };
  }
}

/**
 * Whether `pid` is a running process (ours or another user's). Signal 0 checks existence without
 * signalling (EPERM: it exists but is another user's); a zombie has ended, though its pid stays
 * taken until its parent collects its exit (a parent that never does keeps it for good).
 *
 * A process the kernel says exists but whose /proc entry cannot be read (/proc mounted with
 * `hidepid=`: another user's process is hidden, or refused) is alive: its state is unknown, and
 * reading it as dead would break a lock another user's mcpmgr holds on a shared AI-client file.
 * hidepid hides only processes we may not trace: our own (mcpmgr's recorded processes among them),
 * zombies included, are still seen. So a pid that only this user's mcpmgr can have written (a
 * foreground run's client entry, a lock in this user's folders) asks `isOwnProcessAlive` instead.
 */
export function isProcessAlive(pid: number): boolean {
  return liveStat(pid) !== undefined;
}

/**
 * Whether `pid`, written by a process of this user's, still runs as one: alive and not hidden. A
 * hidden one is another user's that took the pid after ours ended; read as alive, it would keep a
 * dead foreground run's AI-client entries (a port nobody of ours holds, which anyone may take) or a
 * dead holder's lock for as long as that stranger runs.
 */
export function isOwnProcessAlive(pid: number): boolean {
  const seen = liveStat(pid);
  return seen !== undefined && seen !== "hidden";
}

/**
 * Whether `pid` is alive and still the process that started at `startTime`. A hidden process is
 * not: the pids compared here are this user's own mcpmgr processes, which /proc shows their owner
 * whatever hidepid says, so a hidden one is another user's that took the pid since.
 */
export function isSameProcess(pid: number, startTime: string): boolean {
  const seen = liveStat(pid);
  return seen !== "hidden" && seen?.startTime === startTime;
}

type Seen = { state: string; startTime: string | undefined } | "hidden" | undefined;

function liveStat(pid: number): Seen {
  // kill(0) and kill(-n) address process groups, never "is this pid alive".
  if (!Number.isSafeInteger(pid) || pid <= 0 || !signalReaches(pid)) return undefined;
  const stat = procStat(pid);
  // Unreadable while the kernel still has the pid: hidden from us, not gone. Gone by this second
  // look, it ended in between (and was collected at once: never a zombie we could see).
  if (stat === undefined) return signalReaches(pid) ? "hidden" : undefined;
  if (stat.state === "Z" || stat.state === "X") return undefined;
  return stat;
}

/** Whether the kernel has a process `pid` (EPERM: it has, another user's). */
function signalReaches(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
