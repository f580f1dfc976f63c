/** What the `client` and `group` commands hand to src/clients: this process's context and its running workloads. */
import { processClientContext } from "../clients/sync.ts";
import type { ClientContext, WorkloadEndpoint } from "../clients/types.ts";
import { clientTransport, workloadUrl } from "../state/workload-url.ts";
import type { WorkloadStore } from "../state/workloads.ts";
import { log } from "./output.ts";
import { selfCommand } from "./self-command.ts";
import { currentStatus } from "./supervisor-control.ts";

export function cliClientContext(): ClientContext {
  return processClientContext({
    log: { warn: (message) => log.warn(message), info: (message) => log.info(message) },
    // A compiled mcpmgr is one absolute executable; a source run is `bun /abs/path/src/main.ts`.
    selfCommand: selfCommand(),
  });
}

/** The workloads that run now (their supervisor says so and is alive), as clients reach them. */
export async function runningWorkloads(store: WorkloadStore): Promise<WorkloadEndpoint[]> {
  const running: WorkloadEndpoint[] = [];
  for (const record of await store.list()) {
    if ((await currentStatus(store, record.name))?.state !== "running") continue;
    running.push({
      name: record.name,
      group: record.group,
      url: workloadUrl(record),
      transport: clientTransport(record),
    });
  }
  return running;
}
