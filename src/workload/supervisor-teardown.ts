/**
 * Taking down what a workload's supervisor leaves: the supervisor itself (SIGTERM, then SIGKILL while the
 * pid is still that workload's supervisor) and, for container workloads, its containers and networks.
 * Used by stop and by a start given up (workload/supervisor-control.ts).
 */
import { errorMessage } from "../errors.ts";
import { installId } from "../state/install-id.ts";
import { isSupervisorOf } from "../state/supervisor-identity.ts";
import type { WorkloadStore } from "../state/workloads.ts";
import type { WorkloadLog } from "./context.ts";

/** Containers and networks of a container workload, removed by label; nothing for other runtimes. */
export async function removeContainers(store: WorkloadStore, name: string, log: WorkloadLog): Promise<void> {
  const record = await store.get(name).catch(() => undefined);
  if (record === undefined || (record.runtime !== "docker" && record.runtime !== "podman")) return;
  // The Docker client (dockerode and its dependencies) only for container workloads.
  const [{ detectEngine }, { removeWorkloadObjects }, { sweepOrphanedContainers }] = await Promise.all([
    import("../runtime/docker/engine.ts"),
    import("../runtime/docker/cleanup.ts"),
    import("./orphan-containers.ts"),
  ]);
  const engine = await detectEngine({
    want: record.runtime,
    ...(record.runtimeEndpoint ? { env: { DOCKER_HOST: record.runtimeEndpoint } } : {}),
  });
  if (engine === undefined) {
    log.warn(
      `${name}: no ${record.runtime} engine answered, so its containers (label mcpmgr.workload=${name}) could not be removed`,
    );
    return;
  }
  await installId(store.paths)
    .then((install) => removeWorkloadObjects(engine, name, install))
    .catch((err: unknown) => log.warn(`${name}: ${errorMessage(err)}`));
  // And what an engine made too late for an earlier `rm` (orphan-containers.ts).
  await sweepOrphanedContainers(engine, store, log);
}

/**
 * SIGTERM, then SIGKILL after `graceMs` (15 s); only while the pid is still this workload's supervisor.
 * `draining`: whether the supervisor said it has requests in progress (its status), for the notice.
 */
export async function terminate(
  store: WorkloadStore,
  pid: number,
  name: string,
  graceMs = 15_000,
  log?: WorkloadLog,
  draining?: () => Promise<boolean>,
): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    try {
      if (isSupervisorOf(pid, name, store.paths)) process.kill(pid, sig);
    } catch {
      // gone, or not ours to signal
    }
  };
  signal("SIGTERM");
  const started = performance.now();
  const deadline = started + graceMs;
  let said = false;
  while (isSupervisorOf(pid, name, store.paths) && performance.now() < deadline) {
    // A stop that takes long is said once, so the user does not take the wait for a hang, and truly: the
    // supervisor letting requests in progress finish, or its server not exiting as its input closes (an SDK
    // server still waiting on a request of its own gets SIGTERM after a grace, as MCP's shutdown says).
    if (log !== undefined && !said && performance.now() - started >= NOTICEABLE_STOP_MS) {
      said = true;
      log.info(
        (await draining?.().catch(() => false))
          ? `waiting for ${name} to stop: requests in progress get up to 10 s to finish`
          : `waiting for ${name} to stop: its MCP server is given a few seconds to exit`,
      );
    }
    await Bun.sleep(50);
  }
  signal("SIGKILL");
}

/** How long a stop may take before it is said what it waits for. */
const NOTICEABLE_STOP_MS = 1_000;
