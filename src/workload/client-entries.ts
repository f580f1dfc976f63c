/**
 * AI clients follow the workload lifecycle (clients/sync.ts does the editing). The calls:
 *
 * - a recorded workload runs: the supervisor calls `clientsSeeStarted` after every start and
 *   restart (it alone knows when a crashed server is back); `run`, `start` and `restart` call it
 *   again once the supervisor is up, so the files are written when the command returns and the
 *   user sees any warning in the terminal (the supervisor's go to the proxy log);
 * - it stops: the supervisor calls `clientsSeeStopped` on a graceful stop (`stop`, `rm`,
 *   `group rm`, a signal, the machine shutting down); `stop` and `rm` call it again after the
 *   supervisor is gone, for one that had to be killed;
 * - a foreground run (`run --foreground`) is written while it runs, with its process id;
 * - an entry whose workload no longer runs (its supervisor was killed with SIGKILL, a
 *   foreground run died) is pruned by `pruneClientEntries`: `list`, `client status` and
 *   `client register` call it, and so does every start.
 * - a client reaching a group through a background gateway whose gateway stopped (or was pruned)
 *   gets another gateway of the group that runs, if one does (one gateway per group and client).
 *
 * Nothing here throws: a client file that cannot be changed and mcpmgr's own registrations
 * that cannot be read are warnings, since a workload starts and stops regardless. The clients
 * module is loaded only when some client follows the group, or some entry is recorded.
 */
import { homedir } from "node:os";
import type { ClientConfigSync, SyncReport } from "../clients/sync.ts";
import type { ClientContext, WorkloadEndpoint } from "../clients/types.ts";
import { errorMessage, isMcpmgrError } from "../errors.ts";
import {
  ClientRegistrationStore,
  type OwnedEntry,
  type Registrations,
  viaGateway,
} from "../state/client-registrations.ts";
import {
  gatewayRegisterAdvice,
  type GroupGateways,
  groupGateways,
  refusesDirectCallers,
} from "../state/gateway-guard.ts";
import { isOwnProcessAlive } from "../state/process-start.ts";
import { clientTransport, workloadUrl } from "../state/workload-url.ts";
import { isGatewayRecord, type WorkloadRecord, WorkloadStore } from "../state/workloads.ts";
import type { WorkloadContext } from "./context.ts";
import type { RunSpec } from "./run-spec.ts";
import { packageRunnerOf, stableSelfCommand } from "./self-command.ts";
import { currentStatus } from "./supervisor-control.ts";

/** What these calls need of a context: `list` builds this much without the rest of a WorkloadContext. */
export type ClientEntriesContext = Pick<WorkloadContext, "log" | "paths" | "env"> &
  Partial<Pick<WorkloadContext, "background">>;

/** States in which a workload's supervisor exists, so its entries stay. */
const LIVE_STATES: ReadonlySet<string> = new Set(["starting", "running", "restarting"]);

/** What clients/ needs of this process: its home, platform, environment, mcpmgr's folders, how it starts itself. */
export function clientContextOf(ctx: ClientEntriesContext): ClientContext {
  const selfCommand = stableSelfCommand();
  const caveat = selfCommandCaveat(selfCommand[0] as string);
  return {
    home: homedir(),
    platform: process.platform,
    env: ctx.env,
    paths: ctx.paths,
    log: warningOnce(ctx.log),
    // A compiled mcpmgr is one absolute executable; a source run is `bun /abs/path/src/main.ts`.
    // By a path an upgrade keeps (a Homebrew Cellar folder is removed by the next upgrade).
    selfCommand,
    ...(caveat !== undefined ? { selfCommandCaveat: caveat } : {}),
    // A supervisor's warnings go to its proxy log: a broken client file stays for the terminal to warn about once.
    ...(ctx.background === true ? { alwaysWarn: true } : {}),
  };
}

/** Why an AI-client entry naming this executable may stop starting, when it runs from a package runner's folder. */
function selfCommandCaveat(executable: string): string | undefined {
  const runner = packageRunnerOf(executable);
  if (runner === undefined) return undefined;
  const where = runner === "npx" ? "npx's cache" : "a temporary folder of bunx's, removed at the next reboot";
  return (
    `AI-client entries that start mcpmgr (Claude Desktop's) name ${executable}, in ${where}: ` +
    `they stop working when it goes; install mcpmgr ('npm install -g mcpmgr', docs/install.md) and run 'mcpmgr client register claude-desktop' with it`
  );
}

/** When each log last gave each AI-client warning (see warningOnce). */
const warnedAt = new WeakMap<object, Map<string, number>>();
const REPEAT_AFTER_MS = 60_000;

/**
 * A client file that cannot be written is met by every step of one command (`run` prunes stale
 * entries first, then writes the new one, and the supervisor does the same): the same warning,
 * word for word, is given once, and again only after a minute (a long-lived supervisor's later restart).
 */
function warningOnce(log: ClientEntriesContext["log"]): ClientContext["log"] {
  const said = warnedAt.get(log) ?? new Map<string, number>();
  warnedAt.set(log, said);
  return {
    info: (message) => log.info(message),
    warn: (message) => {
      const last = said.get(message);
      if (last !== undefined && Date.now() - last < REPEAT_AFTER_MS) return;
      said.set(message, Date.now());
      log.warn(message);
    },
  };
}

/** A recorded workload (or background gateway) as clients reach it. */
export function endpointOf(record: WorkloadRecord): WorkloadEndpoint {
  return {
    name: record.name,
    group: record.group,
    url: workloadUrl(record),
    transport: clientTransport(record),
    createdAt: record.createdAt,
    ...(isGatewayRecord(record) ? { gateway: true } : {}),
  };
}

/** The recorded workloads that run now (their supervisor says so and is alive), as clients reach them. */
export async function runningWorkloads(store: WorkloadStore): Promise<WorkloadEndpoint[]> {
  const running: WorkloadEndpoint[] = [];
  for (const record of (await store.listReadable()).records) {
    if ((await currentStatus(store, record.name))?.state === "running") running.push(endpointOf(record));
  }
  return running;
}

/** A recorded workload runs (after every start and restart): the clients following its group get its entry. */
export async function clientsSeeStarted(record: WorkloadRecord, ctx: ClientEntriesContext): Promise<void> {
  const registrations = await readRegistrations(ctx);
  if (registrations === undefined || !isFollowed(registrations, record.group)) return;
  await withSync(ctx, `were not told that ${record.name} runs`, async (sync) => {
    await sync.pruneEntries(liveness(ctx));
    const refused = refusesDirectCallers(ctx.paths, record)
      ? await groupGateways(new WorkloadStore(ctx.paths), record.group)
      : undefined;
    describe(ctx, await sync.onWorkloadStarted(endpointOf(record)), record.group, refused);
  });
}

/** A recorded workload stopped or is being removed: its entries go. */
export async function clientsSeeStopped(name: string, ctx: ClientEntriesContext): Promise<void> {
  await removeEntries(ctx, name, undefined);
}

/**
 * A recorded workload was removed (`rm`, `group rm --with-workloads`): what was kept of its entries
 * while it was stopped (keys the user added, which may hold a token) goes too; a workload run again
 * under its name is another server.
 */
export async function clientsForgetRemoved(name: string, ctx: ClientEntriesContext): Promise<void> {
  const registrations = await readRegistrations(ctx);
  const kept = Object.values(registrations?.kept ?? {}).some((files) =>
    Object.values(files).some((entries) => name in entries),
  );
  if (!kept) return;
  await withSync(ctx, `still keep what was added to ${name}'s entries`, (sync) => sync.forgetWorkload(name));
}

/**
 * `run --foreground`: written into the clients following its group while it runs, under this
 * process's id; returns what takes it out again. Its name is its own while it runs (no record
 * has it, and none can be made: state/foreground-runs.ts), so no other entry fights over it.
 */
export async function clientsSeeForegroundRun(
  spec: RunSpec,
  url: string,
  ctx: ClientEntriesContext,
): Promise<() => Promise<void>> {
  const nothing = async () => {};
  const registrations = await readRegistrations(ctx);
  if (registrations === undefined || !isFollowed(registrations, spec.group)) return nothing;
  const pid = process.pid;
  const endpoint: WorkloadEndpoint = { name: spec.name, group: spec.group, url, transport: transportOf(spec), pid };
  await withSync(ctx, `were not told that ${spec.name} runs`, async (sync) => {
    await sync.pruneEntries(liveness(ctx));
    describe(ctx, await sync.onWorkloadStarted(endpoint), spec.group);
  });
  return () => removeEntries(ctx, spec.name, pid);
}

/** The AI clients that hold this process's foreground run's entry now (for its warnings). */
export async function foregroundRunClients(name: string, ctx: ClientEntriesContext): Promise<string[]> {
  const registrations = await readRegistrations(ctx);
  if (registrations === undefined) return [];
  return Object.entries(registrations.owned)
    .filter(([, files]) => Object.values(files).some((entries) => entries[name]?.pid === process.pid))
    .map(([client]) => client)
    .sort();
}

/**
 * Takes out entries whose workload no longer runs. Checked without the lock first, so that
 * `list` loads the clients module only when something is stale; then again under the lock.
 */
export async function pruneClientEntries(ctx: ClientEntriesContext): Promise<void> {
  const registrations = await readRegistrations(ctx);
  if (registrations === undefined) return;
  const live = liveness(ctx);
  let stale = false;
  for (const [name, entry] of ownedEntries(registrations)) if (!(await live(name, entry))) stale = true;
  if (!stale) return;
  await withSync(ctx, "still list workloads that stopped", async (sync) => {
    const reports = await sync.pruneEntries(liveness(ctx));
    for (const report of reports) {
      if (report.action === "removed")
        ctx.log.info(`removed ${report.workload} from ${report.client} (${report.file}): it no longer runs`);
    }
    await handOverGateways(ctx, sync, gatewayGroups(registrations, reports), "");
  });
}

async function removeEntries(ctx: ClientEntriesContext, name: string, pid: number | undefined): Promise<void> {
  const registrations = await readRegistrations(ctx);
  if (registrations === undefined) return;
  if (!ownedEntries(registrations).some(([owned, entry]) => owned === name && entry.pid === pid)) return;
  await withSync(ctx, `still list ${name}`, async (sync) => {
    const reports = await sync.onWorkloadStopped(pid === undefined ? { name } : { name, pid });
    const removed = reports.filter((report) => report.action === "removed");
    if (removed.length > 0) ctx.log.info(`removed ${name} from ${removed.map(where).join(", ")}`);
    await handOverGateways(ctx, sync, gatewayGroups(registrations, removed), name);
  });
}

/** The groups whose gateway entry went from a client reaching them through a gateway (`registrations` as before). */
function gatewayGroups(registrations: Registrations, reports: readonly SyncReport[]): Set<string> {
  const groups = new Set<string>();
  for (const report of reports) {
    if (report.action !== "removed") continue;
    const group = registrations.owned[report.client]?.[report.file]?.[report.workload]?.group;
    if (group !== undefined && viaGateway(registrations, report.client, group)) groups.add(group);
  }
  return groups;
}

/**
 * A client reaches a group through one of its background gateways (clients/gateway-rules.ts): when the
 * one it has stops (or is pruned), another of the group that runs takes its place at once, rather than
 * when it next starts. `except` is the one that stopped.
 */
async function handOverGateways(
  ctx: ClientEntriesContext,
  sync: ClientConfigSync,
  groups: ReadonlySet<string>,
  except: string,
): Promise<void> {
  if (groups.size === 0) return;
  const running = (await runningWorkloads(new WorkloadStore(ctx.paths))).filter(
    (workload) => workload.gateway === true && workload.name !== except,
  );
  for (const group of groups) {
    const [next] = running.filter((workload) => workload.group === group).sort((a, b) => a.name.localeCompare(b.name));
    if (next !== undefined) describe(ctx, await sync.onWorkloadStarted(next), group);
  }
}

/** One line saying which clients have the workload now (skipped ones were warned about already). */
function describe(
  ctx: ClientEntriesContext,
  reports: readonly SyncReport[],
  group: string,
  refused?: GroupGateways,
): void {
  const written = reports.filter((report) => report.action !== "skipped" && report.action !== "removed");
  const name = written[0]?.workload;
  if (name === undefined) return;
  ctx.log.info(`${name} is in the AI clients following group ${group}: ${written.map(where).join(", ")}`);
  // Its entries are there, but the member answers only the gateway that guards its group (gateway.md);
  // `refused` holds the group's background gateways, for advice that gives each client a guarding one.
  if (refused !== undefined)
    ctx.log.warn(
      `${name} refuses these clients while a gateway with policies serves group ${group}; switch each to the gateway: ` +
        written.map((report) => gatewayRegisterAdvice(report.client, group, refused)).join(", "),
    );
}

function where(report: SyncReport): string {
  return `${report.client} (${report.file})`;
}

/**
 * What each log was told of the registrations that cannot be read: one command (`rm` reads them at
 * the start, when the workload stops, and when it is forgotten) says a problem once.
 */
const unreadableSaid = new WeakMap<object, Set<string>>();

/** The registrations, or undefined (with a warning, once per log and text) when mcpmgr's own file cannot be read. */
export async function readRegistrations(ctx: ClientEntriesContext): Promise<Registrations | undefined> {
  try {
    return await new ClientRegistrationStore(ctx.paths).read();
  } catch (err) {
    const said = unreadableSaid.get(ctx.log) ?? new Set<string>();
    unreadableSaid.set(ctx.log, said);
    const text = errorMessage(err);
    if (!said.has(text)) {
      said.add(text);
      warn(ctx, "cannot be kept in step", err);
    }
    return undefined;
  }
}

function isFollowed(registrations: Registrations, group: string): boolean {
  return Object.values(registrations.clients).some((client) => client.groups.includes(group));
}

function ownedEntries(registrations: Registrations): [string, OwnedEntry][] {
  return Object.values(registrations.owned).flatMap((files) =>
    Object.values(files).flatMap((entries) => Object.entries(entries)),
  );
}

/**
 * Whether an entry's workload runs: a foreground run's process is alive; a recorded workload
 * exists in the entry's group and its supervisor is alive. Unreadable state keeps the entry.
 */
function liveness(ctx: ClientEntriesContext): (name: string, entry: OwnedEntry) => Promise<boolean> {
  const store = new WorkloadStore(ctx.paths);
  const known = new Map<string, Promise<boolean>>();
  return (name, entry) => {
    // Our own foreground run's pid (registrations are this user's): hidden by hidepid, it is a stranger's now.
    if (entry.pid !== undefined) return Promise.resolve(isOwnProcessAlive(entry.pid));
    const key = `${name} ${entry.group}`;
    let runs = known.get(key);
    if (runs === undefined) {
      runs = recordedWorkloadRuns(store, name, entry.group);
      known.set(key, runs);
    }
    return runs;
  };
}

async function recordedWorkloadRuns(store: WorkloadStore, name: string, group: string): Promise<boolean> {
  try {
    const record = await store.get(name);
    if (record === undefined || record.group !== group) return false;
    const status = await currentStatus(store, name);
    return status !== undefined && LIVE_STATES.has(status.state);
  } catch {
    return true;
  }
}

/** The transport a client uses for a foreground run, as state/workload-url.ts says for a recorded one. */
function transportOf(spec: RunSpec): WorkloadEndpoint["transport"] {
  if (spec.placement.kind === "remote") return "streamable-http";
  const { transport } = spec.placement.server;
  return transport === "stdio" ? spec.proxyMode : transport;
}

async function withSync(
  ctx: ClientEntriesContext,
  what: string,
  fn: (sync: ClientConfigSync) => Promise<void>,
): Promise<void> {
  try {
    const { ClientConfigSync } = await import("../clients/sync.ts");
    await fn(new ClientConfigSync(clientContextOf(ctx)));
  } catch (err) {
    warn(ctx, what, err);
  }
}

function warn(ctx: ClientEntriesContext, what: string, err: unknown): void {
  const hint = isMcpmgrError(err) && err.hint ? ` (${err.hint})` : "";
  ctx.log.warn(`AI clients ${what}: ${errorMessage(err)}${hint}`);
}
