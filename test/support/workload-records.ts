/**
 * Workload records written straight into a store, for unit tests of what reads them (selections,
 * completion): no supervisor runs them, so no port is listened on and nothing is spawned.
 */
import type { WorkloadStore } from "../../src/state/workloads.ts";

/** A process workload of server-everything for each `[name, proxyPort]`, in order. */
export async function recordPackageWorkloads(
  store: WorkloadStore,
  workloads: readonly (readonly [name: string, proxyPort: number])[],
): Promise<void> {
  for (const [name, proxyPort] of workloads)
    await store.create({
      name,
      source: { kind: "package", ref: "npx://@modelcontextprotocol/server-everything" },
      transport: "stdio",
      proxyPort,
      runtime: "process",
    });
}
