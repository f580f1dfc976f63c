/**
 * Whether a pid's process lives, and when it started, to tell a live pid from one reused by
 * another process since: a pid recorded in a file (a lock's holder, a supervisor's status, a
 * gateway's guard marker, a foreground run's claim, a client entry's run) counts only while the
 * process that wrote it lives. Every liveness check asks `isProcessAlive` here, so a zombie
 * (ended, not yet collected by its parent) is dead for all of them alike.
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
 */
export function isProcessAlive(pid: number): boolean {
  return liveStat(pid) !== undefined;
}

/** Whether `pid` is alive and still the process that started at `startTime`. */
export function isSameProcess(pid: number, startTime: string): boolean {
  return liveStat(pid)?.startTime === startTime;
}

function liveStat(pid: number): { state: string; startTime: string | undefined } | undefined {
  // kill(0) and kill(-n) address process groups, never "is this pid alive".
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return undefined;
  }
  const stat = procStat(pid);
  if (stat === undefined || stat.state === "Z" || stat.state === "X") return undefined;
  return stat;
}
