/**
 * `mcpmgr client register|remove|status|setup` from the workload layer's side: an AI client
 * starts or stops following a group, its file is brought in step with the group's running
 * workloads, and what changed is logged. The CLI parses argv and says the outcome; the groups
 * and the registrations are read here, through clients/ and state/.
 */
import { clientById } from "../clients/catalog.ts";
import { installedClients } from "../clients/installed.ts";
import { ClientConfigSync, type ClientStatus, type SyncReport } from "../clients/sync.ts";
import type { ClientContext, ClientDefinition, ClientId } from "../clients/types.ts";
import { McpmgrError } from "../errors.ts";
import { ClientRegistrationStore } from "../state/client-registrations.ts";
import { gatewayRegisterAdvice, groupGateways, isGroupGuarded } from "../state/gateway-guard.ts";
import { GroupStore } from "../state/groups.ts";
import { WorkloadStore } from "../state/workloads.ts";
import { type ClientEntriesContext, clientContextOf, pruneClientEntries, runningWorkloads } from "./client-entries.ts";

const verbs: Readonly<Record<SyncReport["action"], string | undefined>> = {
  added: "added",
  updated: "updated",
  removed: "removed",
  unchanged: undefined,
  skipped: undefined, // already warned about, with the reason
};

function logChanges(reports: readonly SyncReport[], ctx: ClientEntriesContext): void {
  for (const report of reports) {
    const verb = verbs[report.action];
    if (verb !== undefined)
      ctx.log.info(`${verb} ${report.workload} in ${clientById(report.client).displayName} (${report.file})`);
  }
}

/** What `client register` did, for the CLI's last line. */
export interface Registered {
  readonly displayName: string;
  readonly file: string;
  /** Running workloads whose entries are now in the file. */
  readonly written: number;
  /** Running workloads that could not be written (a file that does not parse, a name taken by the user's own entry, ...), each warned about. */
  readonly skipped: number;
}

/**
 * `client register`: the client follows `group` (through its background gateway with
 * `gateway`); entries of workloads that no longer run are pruned first, so the file ends true.
 */
export async function registerClient(
  client: ClientId,
  group: string,
  options: { readonly gateway: boolean },
  ctx: ClientEntriesContext,
): Promise<Registered> {
  // The user asked about this client: a broken file is warned about even if it was before (broken-file-notice.ts).
  const clientCtx = { ...clientContextOf(ctx), alwaysWarn: true };
  const definition = clientById(client);
  const file = definition.configPath(clientCtx);
  if (!installedClients(clientCtx).includes(definition)) throw notInstalled(definition, file, clientCtx);
  await pruneClientEntries(ctx);
  const store = new WorkloadStore(ctx.paths);
  // Listed under the registrations' lock: a workload starting meanwhile is either listed or sees the registration.
  const reports = await new ClientConfigSync(clientCtx).registerClient(client, group, () => runningWorkloads(store), {
    gateway: options.gateway,
  });
  logChanges(reports, ctx);
  // The gateway names such clients only as it starts: one registered while it runs would be refused without a word.
  if (!options.gateway && isGroupGuarded(ctx.paths, group))
    ctx.log.warn(
      `a gateway with policies serves group ${group}: its workloads refuse ${definition.displayName} while that gateway runs; ` +
        `register it through the gateway instead: ${gatewayRegisterAdvice(client, group, await groupGateways(store, group))}`,
    );
  const written = reports.filter(
    (report) => report.action !== "skipped" && report.action !== "removed" && report.otherGroup !== true,
  ).length;
  const skipped = reports.filter((report) => report.action === "skipped").length;
  return { displayName: definition.displayName, file, written, skipped };
}

/**
 * Registering a client that is not installed would make its folder (to write its file), and the client
 * would count as installed from then on (`client status`, `client setup`): refused before anything
 * changes. Its folder made by the user (a client installed elsewhere, settings put in place first) is
 * what says otherwise.
 */
function notInstalled(definition: ClientDefinition, file: string, ctx: ClientContext): McpmgrError {
  const markers = definition.installMarkers(ctx);
  const folders = markers.filter((marker) => marker !== file);
  const missing = markers.length === 1 ? `${markers[0]} does not exist` : `none of ${markers.join(", ")} exists`;
  const make = folders[0] !== undefined ? `; to write its file anyway, make ${folders[0]} yourself first` : "";
  return new McpmgrError("INVALID_ARGUMENT", `${definition.displayName} does not look installed here: ${missing}`, {
    hint: `install ${definition.displayName} and start it once (it makes its folder), then register it again${make}; 'mcpmgr client status' shows which clients look installed`,
  });
}

/**
 * `client remove`: the client stops following `group`, or every group without one. Naming a
 * group it does not follow is a mistake (a typo, most likely), refused before anything changes;
 * without a group, a client that follows none is left as it is. Returns the groups it left.
 */
export async function unregisterClient(
  client: ClientId,
  group: string | undefined,
  ctx: ClientEntriesContext,
): Promise<readonly string[]> {
  const followed = (await new ClientRegistrationStore(ctx.paths).read()).clients[client]?.groups ?? [];
  if (group !== undefined && !followed.includes(group)) {
    const name = clientById(client).displayName;
    throw new McpmgrError("INVALID_ARGUMENT", `${name} does not follow group ${group}`, {
      hint:
        followed.length > 0
          ? `it follows ${followed.join(", ")}; 'mcpmgr client remove ${client}' stops all of them`
          : `it follows no group; 'mcpmgr client status' shows what each client follows`,
    });
  }
  if (followed.length === 0) return [];
  logChanges(await new ClientConfigSync(clientContextOf(ctx)).removeClient(client, group), ctx);
  return group === undefined ? followed : [group];
}

/** `client status`: every supported client, after entries of workloads that no longer run are pruned. */
export async function clientStatus(ctx: ClientEntriesContext): Promise<readonly ClientStatus[]> {
  await pruneClientEntries(ctx);
  return new ClientConfigSync(clientContextOf(ctx)).status();
}

/** `client setup`: the clients that look installed here, by id. */
export function installedClientIds(ctx: ClientEntriesContext): ClientId[] {
  return installedClients(clientContextOf(ctx)).map((client) => client.id);
}

/** `client setup`: the groups a client could follow, by name. */
export async function groupNames(ctx: ClientEntriesContext): Promise<string[]> {
  return (await new GroupStore(ctx.paths).list()).map((group) => group.name);
}
