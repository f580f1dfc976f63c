/**
 * A recorded workload's endpoint for `mcpmgr proxy stdio NAME` (Claude Desktop's entry),
 * trusted only while the workload's supervisor lives. The endpoint is a loopback port like
 * any other: once its supervisor is gone (the workload stopped, or the supervisor killed)
 * another local user can listen there and answer as the workload. So the relay starts only
 * while the supervisor (a process of this user's running `__supervise NAME` for this home) is alive and the
 * workload running or restarting (the supervisor holds its port through restarts), and the
 * same is checked again before every request the relay sends. A foreground run (`run --foreground`,
 * no record) is relayed to the same way while its own process, which holds its port, lives.
 * Each new connection must also have reached a listener that process holds (state/listener-owner.ts):
 * a process alive is not its port held (a stopping supervisor closes its port a moment before it exits).
 */
import { machineAddresses } from "../config/ip-address.ts";
import { McpmgrError } from "../errors.ts";
import type { UpstreamFetch } from "../proxy/authenticated-fetch.ts";
import { type ForegroundServing, liveForegroundNames, liveForegroundRun } from "../state/foreground-runs.ts";
import type { McpmgrPaths } from "../state/paths.ts";
import type { WorkloadRecord, WorkloadState } from "../state/workload-record.ts";
import { reachesWorkload, workloadUrl } from "../state/workload-url.ts";
import type { WorkloadStore } from "../state/workloads.ts";
import { isSupervisorOf } from "../state/supervisor-identity.ts";
import type { ConnectionPeer } from "../proxy/upstream/types.ts";
import { listenerHeldBy } from "../state/listener-owner.ts";
import { currentStatus } from "./supervisor-control.ts";

export interface LiveWorkload {
  readonly url: URL;
  /** Resolves while the workload runs behind `url`; WORKLOAD_NOT_RUNNING otherwise. */
  assertRunning(): Promise<void>;
  /** Whether the listener a connection reached (its address and port) is the serving process's. */
  servesAt(peer: ConnectionPeer): boolean;
  /** The serving process (supervisor or foreground run) as last checked: a new one after a restart. */
  readonly pid: number;
}

/** States in which the supervisor holds the workload's port. */
const SERVING: ReadonlySet<WorkloadState> = new Set(["running", "restarting"]);
/** How long a workload that is starting is waited for before proxy stdio gives up. */
const STARTING_WAIT_MS = 15_000;

export async function liveWorkload(store: WorkloadStore, name: string): Promise<LiveWorkload> {
  const url = workloadUrl(await store.getExisting(name));
  let pid = await servingSupervisor(store, name, url);
  return {
    url: new URL(url),
    async assertRunning() {
      if (isSupervisorOf(pid, name, store.paths)) return;
      // Restarted meanwhile (`mcpmgr restart`): another supervisor, serving the same endpoint.
      pid = await servingSupervisor(store, name, url);
    },
    servesAt: (peer) => isSupervisorOf(pid, name, store.paths) && listenerHeldBy(pid, peer.address, peer.port),
    get pid() {
      return pid;
    },
  };
}

/**
 * The recorded workload whose supervisor serves `url` now (state/workload-url.ts `reachesWorkload`), if
 * any: `proxy stdio URL` given one of our own workloads' URLs refuses what `proxy stdio NAME` refuses. A
 * stopped workload's port is no longer its own (anyone may listen there), so it names none.
 */
export async function runningWorkloadAt(store: WorkloadStore, url: URL): Promise<WorkloadRecord | undefined> {
  const local = new Set(machineAddresses());
  for (const record of (await store.listReadable()).records) {
    if (!reachesWorkload(record, url, local)) continue;
    const status = await currentStatus(store, record.name).catch(() => undefined);
    if (status?.pid !== undefined && SERVING.has(status.state) && isSupervisorOf(status.pid, record.name, store.paths))
      return record;
  }
  return undefined;
}

/**
 * The live foreground run that serves `url` (as `runningWorkloadAt` for a record): its name and what its claim
 * says it serves. Its listener is its claim's URL, on the address it listens on when the claim names it.
 */
export function runningForegroundAt(
  paths: McpmgrPaths,
  url: URL,
): { readonly name: string; readonly serving?: ForegroundServing } | undefined {
  const local = new Set(machineAddresses());
  for (const name of liveForegroundNames(paths)) {
    const claim = liveForegroundRun(paths, name);
    if (claim?.url === undefined || !URL.canParse(claim.url)) continue;
    const served = new URL(claim.url);
    const listener = {
      host: claim.serving?.host ?? served.hostname,
      proxyPort: Number(served.port || "80"),
      proxyPath: served.pathname,
    };
    if (reachesWorkload(listener, url, local)) return { name, ...(claim.serving ? { serving: claim.serving } : {}) };
  }
  return undefined;
}

/** A live foreground run of that name that serves already; undefined when there is none. */
export function liveForegroundWorkload(paths: McpmgrPaths, name: string): LiveWorkload | undefined {
  const claim = liveForegroundRun(paths, name);
  if (claim?.url === undefined) return undefined;
  const { pid, url } = claim;
  return {
    url: new URL(url),
    async assertRunning() {
      const now = liveForegroundRun(paths, name);
      if (now?.pid === pid && now.url === url) return;
      throw new McpmgrError(
        "WORKLOAD_NOT_RUNNING",
        `the foreground run ${name} (pid ${pid}) ended: mcpmgr does not connect to its port without it behind it`,
        { hint: "run it again (or start a workload of that name), then connect again" },
      );
    },
    servesAt: (peer) => liveForegroundRun(paths, name)?.pid === pid && listenerHeldBy(pid, peer.address, peer.port),
    pid,
  };
}

/** The pid of the supervisor serving `url` for the workload, waiting a little for one that is starting. */
async function servingSupervisor(store: WorkloadStore, name: string, url: string): Promise<number> {
  const deadline = performance.now() + STARTING_WAIT_MS;
  for (;;) {
    const status = await currentStatus(store, name);
    const record = await store.get(name);
    const state = status?.state ?? "stopped";
    if (record === undefined || workloadUrl(record) !== url) throw notRunning(name, "was removed or moved");
    if (SERVING.has(state) && status?.pid !== undefined && isSupervisorOf(status.pid, name, store.paths))
      return status.pid;
    if (state !== "starting" || performance.now() > deadline) throw notRunning(name, `is ${state}`);
    await Bun.sleep(200);
  }
}

function notRunning(name: string, why: string): McpmgrError {
  return new McpmgrError(
    "WORKLOAD_NOT_RUNNING",
    `workload ${name} ${why}: mcpmgr does not connect to its port without its supervisor behind it`,
    { hint: `start it with 'mcpmgr start ${name}' (see 'mcpmgr list'), then connect again` },
  );
}

/**
 * `fetch`, after checking that the workload still runs behind the endpoint, and its answer used
 * only if it still does afterwards: the first check can pass an instant before the supervisor dies
 * (the SDK reconnects its listen stream on its own schedule), and the connection then reach whoever
 * took the port since. Nobody can take the port before the supervisor is gone, so the second check
 * sees it gone whenever an impostor could have answered. A new connection must also have reached the
 * serving process's own listener before anything is written on it (whoever else may listen at that port).
 */
/**
 * The second check's refusal: the request was sent and the workload may have carried it out (its answer's
 * headers came), so its own code, WORKLOAD_ENDED_DURING_REQUEST: whoever sends it must not send it again
 * elsewhere (a tool call would run twice), unlike WORKLOAD_NOT_RUNNING, which says nothing was sent.
 */
function endedDuringRequest(err: unknown): unknown {
  if (!(err instanceof McpmgrError) || err.code !== "WORKLOAD_NOT_RUNNING") return err;
  return new McpmgrError(
    "WORKLOAD_ENDED_DURING_REQUEST",
    `${err.message} (it ended while answering: the request was sent, and whether it was carried out is not known)`,
    { ...(err.hint !== undefined ? { hint: err.hint } : {}), cause: err },
  );
}

/** Whether `err` says the workload is not served (before a request was sent, or while it was answered). */
export function workloadGone(err: unknown): boolean {
  return (
    err instanceof McpmgrError && (err.code === "WORKLOAD_NOT_RUNNING" || err.code === "WORKLOAD_ENDED_DURING_REQUEST")
  );
}

export function liveWorkloadFetch(workload: LiveWorkload, fetch: UpstreamFetch): UpstreamFetch {
  const checkConnection = (peer: ConnectionPeer | undefined) => {
    if (peer !== undefined && workload.servesAt(peer)) return;
    throw new McpmgrError(
      "WORKLOAD_NOT_RUNNING",
      `${workload.url.origin} is not answered by the workload's own listener: mcpmgr does not send there`,
      { hint: "check 'mcpmgr list' and what else listens on that port ('ss -ltnp')" },
    );
  };
  return async (url, init) => {
    await workload.assertRunning();
    const response = await fetch(url, { ...init, redirect: "manual", checkConnection, listenerPid: workload.pid });
    try {
      await workload.assertRunning();
    } catch (err) {
      await response.body?.cancel().catch(() => {});
      throw endedDuringRequest(err);
    }
    return response;
  };
}
