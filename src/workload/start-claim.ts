/**
 * Whose start of a workload the status holds: the command that wrote "starting" (`startedBy`), the
 * supervisor it spawned (its pid, recorded at once), or another command's start under way, which
 * one start must not run over (two supervisors would race for the port). supervisor-control.ts
 * starts and waits; supervisor.ts takes its start over from the command (`claimStart`, here).
 */
import { McpmgrError } from "../errors.ts";
import { isSameProcess, processStartTime } from "../state/process-start.ts";
import { isSupervisorOf } from "../state/supervisor-identity.ts";
import { reconcileStatus, type WorkloadStatus } from "../state/workload-record.ts";
import type { WorkloadStore } from "../state/workloads.ts";

/** The workload's status, a dead supervisor's state reconciled (its pid no longer that supervisor's). */
export async function currentStatus(store: WorkloadStore, name: string): Promise<WorkloadStatus | undefined> {
  const status = await store.readStatus(name);
  return status === undefined ? undefined : reconcileStatus(status, (pid) => isSupervisorOf(pid, name, store.paths));
}

/**
 * Names the command that spawned a supervisor (`pid:startTime`), for the supervisor's first status
 * write: the "starting" it takes over must still be that command's (see `claimStart`).
 */
export const STARTED_BY_ENV = "MCPMGR_STARTED_BY";

/** Whether a status's `startedBy` is the command `pid:startTime` names. */
export function startedByIs(startedBy: WorkloadStatus["startedBy"], named: string): boolean {
  return startedBy !== undefined && `${startedBy.pid}:${startedBy.startTime}` === named;
}

/**
 * Another command's start of the workload was under way (`start --all` in two terminals, a `start`
 * during a `restart`), or took over from ours (two `restart`s): one supervisor is left, not ours.
 * That start's outcome is the answer to ours (workload/lifecycle.ts waits for it), not a failure.
 */
export class StartedElsewhere extends McpmgrError {
  constructor(message: string) {
    super("CANCELLED", message, { hint: `'mcpmgr list' shows how that start is doing` });
  }
}

/**
 * Ctrl-C while our start waited on what another command did to the workload (stopped it, a restart's
 * start to follow): the wait ends, and nothing of that command's is undone; a first start keeps the
 * record (first-start.ts) and says so (cli/signals.ts `cancelOnSignal`).
 */
export class LeftToOtherCommand extends McpmgrError {
  constructor(name: string, what: string, signal: AbortSignal) {
    super("CANCELLED", `${name} ${what}; stopped waiting (${String(signal.reason)})`, {
      hint: `it stays recorded: 'mcpmgr list' shows how it is doing`,
    });
  }
}

/**
 * Who is starting or serving the workload now, when someone is: a live supervisor of it in a live
 * state, or another mcpmgr command that recorded "starting" and lives on to spawn its supervisor.
 */
export function startUnderWay(
  current: WorkloadStatus | undefined,
  name: string,
  store: WorkloadStore,
): string | undefined {
  if (current === undefined) return undefined;
  const live = reconcileStatus(current, (pid) => isSupervisorOf(pid, name, store.paths));
  if (live.state !== "starting" && live.state !== "running" && live.state !== "restarting") return undefined;
  if (live.pid !== undefined)
    return `its supervisor (pid ${live.pid}) ${live.state === "starting" ? "is starting it" : "runs it"}`;
  const starter = live.startedBy;
  if (starter === undefined || starter.pid === process.pid) return undefined;
  return `another mcpmgr command (pid ${starter.pid}) is starting it`;
}

/** This command, as a status's `startedBy` names it. */
export function thisCommand(): { pid: number; startTime: string } {
  return { pid: process.pid, startTime: processStartTime(process.pid) ?? "" };
}

/**
 * The new supervisor's pid in the status at once (it writes it again as it starts): a `stop` or
 * `rm` from now on finds a supervisor to stop, not a "starting" without one that it would leave to
 * start. Only over this command's pid-less "starting" written before the spawn: a supervisor quicker
 * than this write (which waits for the store's lock among other commands' writes) has reported
 * already, and its "running" must stay; so must a `stop` that came in between, and the "starting"
 * of a `restart` after that stop.
 */
export async function recordSupervisorPid(store: WorkloadStore, name: string, pid: number): Promise<void> {
  await store.writeStatus(
    name,
    { state: "starting", pid },
    {
      onlyIf: (current) =>
        current?.state === "starting" &&
        current.pid === undefined &&
        (current.startedBy === undefined || current.startedBy.pid === process.pid),
    },
  );
}

/**
 * Whether the status is another start's: one about to spawn its supervisor ("starting", no pid yet)
 * or another supervisor's report. Ours wrote its pid before this is asked; `stop` writes none.
 */
export function startedElsewhere(status: WorkloadStatus | undefined, ours: number): boolean {
  if (status === undefined || status.pid === ours) return false;
  return status.pid !== undefined || status.state === "starting";
}

/**
 * Whether the status is a "stopped" that a `restart` wrote and that command still lives: its own
 * "starting" is yet to come (it removes the workload's containers first, which can take seconds).
 */
export function restartUnderWay(status: WorkloadStatus | undefined): boolean {
  const restarter = status?.state === "stopped" ? status.restartedBy : undefined;
  return restarter !== undefined && isSameProcess(restarter.pid, restarter.startTime);
}

/** Whether the status is a "stopped" that an `rm` wrote and that command still lives: the removal is yet to come. */
export function removalUnderWay(status: WorkloadStatus | undefined): boolean {
  const remover = status?.state === "stopped" && status.stoppedBy?.removing === true ? status.stoppedBy : undefined;
  return remover !== undefined && isSameProcess(remover.pid, remover.startTime);
}

/**
 * Whether the status is a plain `stop`'s "stopped" (it names that command, which neither restarts nor
 * removes the workload): nothing follows it, so it is the answer at once.
 */
export function plainStop(status: WorkloadStatus | undefined): boolean {
  return (
    status?.state === "stopped" &&
    status.stoppedBy !== undefined &&
    status.stoppedBy.removing !== true &&
    status.restartedBy === undefined
  );
}

/**
 * What took a stop over between its supervisor's exit and its record of "stopped", which must then not
 * be written: `start`, another command's start (a `restart` or `start` elsewhere may begin once the
 * supervisor has written its own "stopped"), or a `restart`'s marked "stopped" whose start follows; `rm`,
 * an `rm`'s marked one, whose removal follows. Undefined while the status is still what the stop ends
 * (the report of its supervisor, pid `stopped`, or what it left on its way out).
 */
export function stopOvertaken(
  current: WorkloadStatus | undefined,
  name: string,
  store: WorkloadStore,
  stopped: number | undefined,
): { readonly start: string } | "rm" | undefined {
  // Its own supervisor's report (one SIGKILLed may not be reaped yet, and look alive) is what it ends.
  if (current?.pid !== undefined && current.pid === stopped) return undefined;
  const under = startUnderWay(current, name, store);
  if (under !== undefined) return { start: under };
  const restarter = restartUnderWay(current) ? current?.restartedBy : undefined;
  if (restarter !== undefined) return { start: `another mcpmgr command (pid ${restarter.pid}) is restarting it` };
  return removalUnderWay(current) ? "rm" : undefined;
}

/** A stop whose record another command's start (`stopOvertaken`) came before: that start goes on. */
export class StartedAgainWhileStopping extends McpmgrError {
  constructor(name: string, under: string) {
    super(
      "CANCELLED",
      `${name} was started again by another mcpmgr command while this stop waited for its supervisor to exit: ${under}`,
      { hint: `that start goes on ('mcpmgr list' shows it): 'mcpmgr stop ${name}' stops it` },
    );
  }
}

/**
 * A `restart` (or `rm`) elsewhere stopped our start (its "stopped" names it) and goes on to start (or
 * remove) the workload: what follows is the answer (`overtaken`: its start, or a stop or removal since,
 * once our supervisor is gone), waited for while that command lives (removing containers between a
 * restart's stop and its start may take a slow engine seconds), at most a minute; `stopped` when it
 * ends without that.
 */
export async function restartFollows(
  store: WorkloadStore,
  name: string,
  stopped: McpmgrError,
  overtaken: () => Promise<McpmgrError | undefined>,
  signal?: AbortSignal,
): Promise<McpmgrError> {
  let doing = "is being restarted";
  for (const deadline = performance.now() + 60_000; performance.now() < deadline; await Bun.sleep(50)) {
    if (signal?.aborted) return new LeftToOtherCommand(name, `${doing} by another mcpmgr command`, signal);
    const status = await store.readStatus(name).catch(() => undefined);
    if (status?.state === "stopped") {
      if (removalUnderWay(status)) doing = "is being removed";
      else if (!restartUnderWay(status)) return stopped;
      continue;
    }
    const next = await overtaken();
    if (next !== undefined) return next;
  }
  return stopped;
}

/**
 * What to report for a "stopped" written over our start. A restart's (or an rm's) names it, and its
 * start (or the removal) is waited for (restartFollows); a plain stop's names it too, and is the answer
 * at once. An unmarked one may be our supervisor's own, written as it obeyed a stop's or a restart's
 * SIGTERM a moment before that command records its marked one (once the process is gone), or the stop
 * or restart of an older version that marks nothing: it is watched for `graceMs` before it counts as a
 * plain stop.
 */
export async function afterStopped(
  store: WorkloadStore,
  name: string,
  stopped: McpmgrError,
  overtaken: () => Promise<McpmgrError | undefined>,
  graceMs: number,
  signal?: AbortSignal,
): Promise<McpmgrError> {
  for (const deadline = performance.now() + graceMs; ; await Bun.sleep(50)) {
    const status = await store.readStatus(name).catch(() => undefined);
    if (restartUnderWay(status) || removalUnderWay(status))
      return restartFollows(store, name, stopped, overtaken, signal);
    if (plainStop(status)) return stopped;
    // Not "stopped" any more: another command's start (or a removal) is the answer.
    if (status?.state !== "stopped") {
      const next = await overtaken();
      if (next !== undefined) return next;
    }
    // Ctrl-C: the stop stands as that command left it (a restart's start may yet follow).
    if (signal?.aborted) return new LeftToOtherCommand(name, "was stopped by another mcpmgr command", signal);
    if (performance.now() >= deadline) return stopped;
  }
}

/**
 * The supervisor's first status write, its pid in the "starting" of the command that spawned it
 * (`startedBy`, named by STARTED_BY_ENV) or already holding its pid. Anything else there means that
 * start is over before this process began: a `stop` wrote "stopped" in its place, or a `restart`
 * after that stop wrote its own "starting". False then, and nothing is written.
 */
export async function claimStart(store: WorkloadStore, name: string, startedBy: string | undefined): Promise<boolean> {
  let claimed = false;
  await store.writeStatus(
    name,
    { state: "starting", restarts: 0, pid: process.pid },
    {
      onlyIf: (current) =>
        (claimed =
          current?.state === "starting" &&
          (current.pid === process.pid ||
            (current.pid === undefined && (startedBy === undefined || startedByIs(current.startedBy, startedBy))))),
    },
  );
  return claimed;
}
