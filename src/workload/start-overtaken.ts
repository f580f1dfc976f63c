/**
 * A start overtaken while its command waits for the supervisor's readiness (supervisor-control.ts):
 * another command stopped, removed or started the workload again, or killed its supervisor before it
 * could report. Each in the words of the wait, with the error the start ends in.
 */
import { McpmgrError } from "../errors.ts";
import { isSupervisorOf } from "../state/supervisor-identity.ts";
import type { WorkloadStore } from "../state/workloads.ts";
import { afterStopped, currentStatus, StartedElsewhere } from "./start-claim.ts";

/**
 * The start given up because another command stopped (or removed, or started again) the workload while
 * its readiness was being confirmed, in the words of startSupervisor's wait. Undefined while ours runs it.
 */
export async function stoppedElsewhere(
  store: WorkloadStore,
  name: string,
  pid: number,
): Promise<McpmgrError | undefined> {
  if ((await store.get(name).catch(() => null)) === undefined) return removedWhileStarting(name);
  const status = await currentStatus(store, name);
  if (status?.state === "stopped") return stoppedWhileStarting(name);
  const replaced = status !== undefined && status.pid !== pid && !isSupervisorOf(pid, name, store.paths);
  return replaced ? restartedWhileStarting(name) : undefined;
}

/**
 * Our supervisor gone without a report of its own: a `stop` or `restart` elsewhere may have killed it
 * before it set its signal handlers (or had to SIGKILL it), and that command records "stopped" (and a
 * restart its own "starting") only once the process is gone and the store's lock is its. A moment is
 * given for that record, as after a closing port in startSupervisor; a supervisor that reported its failure, or
 * crashed with nobody's record following, is the failure it looks like.
 */
export async function killedElsewhere(
  store: WorkloadStore,
  name: string,
  pid: number,
  signal: AbortSignal | undefined,
): Promise<McpmgrError | undefined> {
  for (let tries = 0; tries < 40; tries++) {
    if ((await store.readStatus(name).catch(() => undefined))?.state === "failed") return undefined;
    const overtaken = await stoppedElsewhere(store, name, pid);
    if (overtaken !== undefined)
      return overtaken instanceof StartedElsewhere ? overtaken : await startFollows(overtaken);
    // Ctrl-C ends the moment early: a supervisor gone with nothing recorded is then given up as a failure is.
    if (signal?.aborted) return undefined;
    await Bun.sleep(50);
  }
  return undefined;

  // A restart writes its "starting" after its "stopped": its start, not the stop, is the answer. Its
  // "stopped" names it (`restartedBy`) and is waited on, as an rm's removal is; a plain stop's names it
  // too (`stoppedBy`) and is the answer at once; a stop or restart of an older version marks nothing,
  // and is given a moment.
  function startFollows(stopped: McpmgrError): Promise<McpmgrError> {
    return afterStopped(store, name, stopped, () => stoppedElsewhere(store, name, pid), 250, signal);
  }
}

export const stoppedWhileStarting = (name: string) =>
  new McpmgrError("CANCELLED", `${name} was stopped while it was starting`, {
    hint: `it stays recorded, stopped, unless it was removed: 'mcpmgr start ${name}' starts it again`,
  });
export const removedWhileStarting = (name: string) =>
  new McpmgrError("CANCELLED", `${name} was removed while it was starting`, { hint: "run it again to create it anew" });
export const restartedWhileStarting = (name: string) =>
  new StartedElsewhere(`${name} was restarted elsewhere while it was starting`);
