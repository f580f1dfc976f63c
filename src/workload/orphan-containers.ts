/**
 * Containers of workloads this home no longer has, swept whenever mcpmgr works with a container
 * workload (its start, stop, restart or rm). A create the engine answers after the workload was
 * removed (past the 10 s a supervisor waits for it, supervisor-control.ts `cancelGraceMs`) makes a
 * container that `rm`, long returned, cannot see; nothing else would ever remove it. Gone means no
 * record and no live foreground run of that name (a foreground run has no record, only its claim).
 * Only never-started containers go (cleanup.ts): a home at the same path elsewhere may share the id.
 */
import type { ContainerEngine } from "../runtime/docker/engine.ts";
import { removeOrphanedObjects } from "../runtime/docker/cleanup.ts";
import { liveForegroundRun } from "../state/foreground-runs.ts";
import { installId } from "../state/install-id.ts";
import type { WorkloadStore } from "../state/workloads.ts";
import type { WorkloadLog } from "./context.ts";

export async function sweepOrphanedContainers(
  engine: ContainerEngine,
  store: WorkloadStore,
  log: WorkloadLog,
): Promise<void> {
  const gone = async (workload: string) => {
    try {
      return (await store.get(workload)) === undefined && liveForegroundRun(store.paths, workload) === undefined;
    } catch {
      // Not a name this home could hold, or a record that cannot be read: not ours to judge.
      return false;
    }
  };
  try {
    for (const workload of await removeOrphanedObjects(engine, await installId(store.paths), gone))
      log.info(`removed the containers left of ${workload}, a workload removed before its engine made them`);
  } catch {
    // A sweep never fails the command it rides on: the next one tries again.
  }
}
