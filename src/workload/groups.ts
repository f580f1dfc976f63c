/**
 * Groups and AI clients from the workload layer's side: the groups with their workloads and
 * clients, the registered clients, and removing a group together with its workloads (their
 * supervisors stopped first). The lifecycle's calls into clients/ are in client-entries.ts.
 */
import { clientById, isClientId } from "../clients/catalog.ts";
import { ClientConfigSync } from "../clients/sync.ts";
import { ClientRegistrationStore } from "../state/client-registrations.ts";
import { GroupStore } from "../state/groups.ts";
import type { McpmgrPaths } from "../state/paths.ts";
import { WorkloadStore } from "../state/workloads.ts";
import { clientContextOf } from "./client-entries.ts";
import type { WorkloadContext } from "./context.ts";
import { stopSupervisor } from "./supervisor-control.ts";

/**
 * `group rm`: refused while the group has workloads unless `withWorkloads`; then each one is
 * stopped and removed, the group's entries leave every AI client following it, and the group goes.
 */
export async function removeGroup(name: string, options: { withWorkloads: boolean }, ctx: WorkloadContext) {
  const store = new WorkloadStore(ctx.paths);
  const groups = new GroupStore(ctx.paths, { workloads: store });
  const group = await groups.removable(name, options);
  for (const workload of group.workloads) {
    const record = await store.get(workload).catch(() => undefined);
    // Its "stopped" says the removal follows (as `rm`'s does): a start of it waiting elsewhere reports
    // the removal, not a plain stop, even while removing its containers takes the engine seconds.
    await stopSupervisor(store, workload, ctx.log, { removing: true }).catch(() => false);
    await store.remove(workload);
    ctx.log.info(`removed workload ${workload}`);
    // As `rm` does: its package's images, once no other workload is from that package (dockerode only then).
    if (record?.runtime === "docker" || record?.runtime === "podman")
      await (await import("./built-images.ts")).removeBuiltImagesOf(record, ctx);
  }
  // Said as `client remove` says it: a client left following no group would otherwise go quiet unexplained.
  const followers = Object.entries((await new ClientRegistrationStore(ctx.paths).read()).clients)
    .filter(([, record]) => record.groups.includes(name))
    .map(([client]) => client)
    .sort();
  await new ClientConfigSync(clientContextOf(ctx)).forgetGroup(name);
  await groups.remove(name);
  for (const client of followers)
    ctx.log.info(
      `${isClientId(client) ? clientById(client).displayName : client} no longer follows group ${name}, which is gone`,
    );
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

/**
 * `client list-registered-clients`: the clients that follow at least one group, with their
 * groups and those of them they reach through the group's gateway, by id.
 */
export async function registeredClients(
  paths: McpmgrPaths,
): Promise<{ readonly client: string; readonly groups: readonly string[]; readonly viaGateway: readonly string[] }[]> {
  const registrations = await new ClientRegistrationStore(paths).read();
  return Object.entries(registrations.clients)
    .filter(([id, record]) => isClientId(id) && record.groups.length > 0)
    .map(([id, record]) => ({
      client: id,
      groups: [...record.groups].sort(),
      viaGateway: [...(record.viaGateway ?? [])].sort(),
    }))
    .sort((a, b) => (a.client < b.client ? -1 : 1));
}
