/**
 * Groups and AI clients from the workload layer's side: the ClientContext of this process
 * (for clients/'s ClientConfigSync), the workloads that run now as clients reach them, the
 * groups with their workloads and clients, the registered clients, and removing a group
 * together with its workloads (their supervisors stopped first).
 */
import { homedir } from "node:os";
import { isClientId } from "../clients/catalog.ts";
import { ClientConfigSync } from "../clients/sync.ts";
import type { ClientContext, WorkloadEndpoint } from "../clients/types.ts";
import { ClientRegistrationStore } from "../state/client-registrations.ts";
import { GroupStore } from "../state/groups.ts";
import type { McpmgrPaths } from "../state/paths.ts";
import { clientTransport, workloadUrl } from "../state/workload-url.ts";
import { WorkloadStore } from "../state/workloads.ts";
import type { WorkloadContext } from "./context.ts";
import { selfCommand } from "./self-command.ts";
import { currentStatus, stopSupervisor } from "./supervisor-control.ts";

/** What clients/ needs of this process: its home, platform, environment, mcpmgr's folders, how it starts itself. */
export function clientContextOf(ctx: WorkloadContext): ClientContext {
  return {
    home: homedir(),
    platform: process.platform,
    env: ctx.env,
    paths: ctx.paths,
    log: ctx.log,
    // A compiled mcpmgr is one absolute executable; a source run is `bun /abs/path/src/main.ts`.
    selfCommand: selfCommand(),
  };
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

/**
 * `group rm`: refused while the group has workloads unless `withWorkloads`; then each one is
 * stopped and removed, the group's entries leave every AI client following it, and the group goes.
 */
export async function removeGroup(name: string, options: { withWorkloads: boolean }, ctx: WorkloadContext) {
  const store = new WorkloadStore(ctx.paths);
  const groups = new GroupStore(ctx.paths, { workloads: store });
  const group = await groups.removable(name, options);
  for (const workload of group.workloads) {
    await stopSupervisor(store, workload, ctx.log).catch(() => false);
    await store.remove(workload);
    ctx.log.info(`removed workload ${workload}`);
  }
  await new ClientConfigSync(clientContextOf(ctx)).forgetGroup(name);
  await groups.remove(name);
}

export interface GroupOverview {
  readonly name: string;
  readonly workloads: readonly string[];
  /** The AI clients that follow the group. */
  readonly clients: readonly string[];
  readonly createdAt?: string;
}

/** `group list`: every group, its workloads and the AI clients registered for it. */
export async function groupOverview(paths: McpmgrPaths): Promise<GroupOverview[]> {
  const registrations = await new ClientRegistrationStore(paths).read();
  const clientsOf = (group: string) =>
    Object.entries(registrations.clients)
      .filter(([, record]) => record.groups.includes(group))
      .map(([client]) => client)
      .sort();
  return (await new GroupStore(paths).list()).map((group) => ({
    name: group.name,
    workloads: group.workloads,
    clients: clientsOf(group.name),
    ...(group.createdAt ? { createdAt: group.createdAt } : {}),
  }));
}

/** `client list-registered-clients`: the clients that follow at least one group, with their groups, by id. */
export async function registeredClients(
  paths: McpmgrPaths,
): Promise<{ readonly client: string; readonly groups: readonly string[] }[]> {
  const registrations = await new ClientRegistrationStore(paths).read();
  return Object.entries(registrations.clients)
    .filter(([id, record]) => isClientId(id) && record.groups.length > 0)
    .map(([id, record]) => ({ client: id, groups: [...record.groups].sort() }))
    .sort((a, b) => (a.client < b.client ? -1 : 1));
}
