/**
 * When a process started, to tell a live pid from one reused by another process since: a pid
 * recorded in a file (a gateway's guard marker, a foreground run's claim) counts only while the
 * process that wrote it lives.
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

/** Whether `pid` is alive (ours or another user's) and still the process that started at `startTime`. */
export function isSameProcess(pid: number, startTime: string): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const stat = procStat(pid);
  // A zombie has ended: only its parent has not collected its exit yet (a parent that never does keeps it for good).
  if (stat === undefined || stat.state === "Z" || stat.state === "X") return false;
  return stat.startTime === startTime;
}
