/**
 * Containers of workloads this home no longer has, or has stopped, swept whenever mcpmgr works with
 * a container workload (its start, stop, restart or rm). A create the engine answers after the
 * workload was removed or stopped (past the 10 s a supervisor waits for it, supervisor-control.ts
 * `cancelGraceMs`) makes a container that `rm` or `stop`, long returned, cannot see; nothing else
 * would remove it before the workload's own next start or rm. Gone means no record and no live
 * foreground run of that name (a foreground run has no record, only its claim); stopped means a
 * record whose status says stopped or failed (a dead supervisor's reads as failed): no supervisor
 * of it runs, and a start writes "starting" before it makes any container, while the engine is
 * asked before the status is read (cleanup.ts), so a container a start makes meanwhile is not
 * among those found. Only never-started containers go (cleanup.ts): a home at the same path
 * elsewhere may share the id.
 */
import type { ContainerEngine } from "../runtime/docker/engine.ts";
import { removeOrphanedObjects } from "../runtime/docker/cleanup.ts";
import { liveForegroundRun } from "../state/foreground-runs.ts";
import { installId } from "../state/install-id.ts";
import { isSupervisorOf } from "../state/supervisor-identity.ts";
import { reconcileStatus } from "../state/workload-record.ts";
import type { WorkloadStore } from "../state/workloads.ts";
import type { WorkloadLog } from "./context.ts";

type Why = "removed" | "stopped";

export async function sweepOrphanedContainers(
  engine: ContainerEngine,
  store: WorkloadStore,
  log: WorkloadLog,
): Promise<void> {
  const why = new Map<string, Why>();
  const gone = async (workload: string) => {
    const reason = await notRunning(store, workload);
    if (reason !== undefined) why.set(workload, reason);
    return reason !== undefined;
  };
  try {
    for (const workload of await removeOrphanedObjects(engine, await installId(store.paths), gone))
      log.info(
        `removed the containers left of ${workload}, a workload ${why.get(workload) ?? "removed"} before its engine made them`,
      );
  } catch {
    // A sweep never fails the command it rides on: the next one tries again.
  }
}

/** Why nothing of `workload` runs here (no record, or a record stopped or failed); undefined when it may. */
async function notRunning(store: WorkloadStore, workload: string): Promise<Why | undefined> {
  try {
    if ((await store.get(workload)) === undefined)
      return liveForegroundRun(store.paths, workload) === undefined ? "removed" : undefined;
    const status = await store.readStatus(workload);
    // No status yet: a record being created, whose start is about to begin.
    if (status === undefined) return undefined;
    const state = reconcileStatus(status, (pid) => isSupervisorOf(pid, workload, store.paths)).state;
    return state === "stopped" || state === "failed" ? "stopped" : undefined;
  } catch {
    // Not a name this home could hold, or a record or status that cannot be read: not ours to judge.
    return undefined;
  }
}
