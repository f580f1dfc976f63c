/**
 * A recorded workload's endpoint for `mcpmgr proxy stdio NAME` (Claude Desktop's entry),
 * trusted only while the workload's supervisor lives. The endpoint is a loopback port like
 * any other: once its supervisor is gone (the workload stopped, or the supervisor killed)
 * another local user can listen there and answer as the workload. So the relay starts only
 * while the supervisor (a process of this user's running `__supervise NAME`) is alive and the
 * workload running or restarting (the supervisor holds its port through restarts), and the
 * same is checked again before every request the relay sends, and on every connection it opens
 * (liveWorkloadFetch). A foreground run (`run --foreground`, no record) is relayed to the same way
 * while its own process, which holds its port, lives.
 */
import { McpmgrError } from "../errors.ts";
import type { UpstreamFetch } from "../proxy/authenticated-fetch.ts";
import { defaultUpstreamClient } from "../proxy/upstream/client.ts";
import { liveForegroundRun } from "../state/foreground-runs.ts";
import type { McpmgrPaths } from "../state/paths.ts";
import type { WorkloadState } from "../state/workload-record.ts";
import { workloadUrl } from "../state/workload-url.ts";
import type { WorkloadStore } from "../state/workloads.ts";
import { isSupervisorOf } from "../state/supervisor-identity.ts";
import { currentStatus } from "./supervisor-control.ts";

export interface LiveWorkload {
  readonly url: URL;
  /** Resolves while the workload runs behind `url`; WORKLOAD_NOT_RUNNING otherwise. */
  assertRunning(): Promise<void>;
  /**
   * For a connection to `url` just opened, before anything is written on it: throws
   * WORKLOAD_NOT_RUNNING unless the process `assertRunning` last found is still alive, so the
   * connection is its (upstream client's `checkConnection`).
   */
  checkConnection(): void;
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
      if (isSupervisorOf(pid, name)) return;
      // Restarted meanwhile (`mcpmgr restart`): another supervisor, serving the same endpoint.
      pid = await servingSupervisor(store, name, url);
    },
    checkConnection() {
      if (!isSupervisorOf(pid, name)) throw notRunning(name, "has no supervisor any more");
    },
  };
}

/** A live foreground run of that name that serves already; undefined when there is none. */
export function liveForegroundWorkload(paths: McpmgrPaths, name: string): LiveWorkload | undefined {
  const claim = liveForegroundRun(paths, name);
  if (claim?.url === undefined) return undefined;
  const { pid, url } = claim;
  const checkConnection = () => {
    const now = liveForegroundRun(paths, name);
    if (now?.pid === pid && now.url === url) return;
    throw new McpmgrError(
      "WORKLOAD_NOT_RUNNING",
      `the foreground run ${name} (pid ${pid}) ended: mcpmgr does not connect to its port without it behind it`,
      { hint: "run it again (or start a workload of that name), then connect again" },
    );
  };
  return { url: new URL(url), assertRunning: async () => checkConnection(), checkConnection };
}

/**
 * `fetch` for a live workload's endpoint (`base`: mcpmgr's credentials, else mcpmgr's own client):
 * the workload is checked before each request (finding a restarted supervisor), and each new
 * connection is checked once open, before anything is written on it (`checkConnection`). A
 * supervisor alive after the connection opened held the port when it opened — nobody can listen
 * there before it is gone, and another user cannot share its port — so the request, credentials
 * and all, reaches the workload or nobody: a supervisor dying just after the first check leaves
 * the connection to whoever took the port since refused unwritten. A connection from the pool was
 * checked when it opened. Through an HTTP proxy from the environment (fetch opens the connection
 * out of sight) the check comes just before the request instead; the answer is used only if the
 * workload still runs after it, there as everywhere.
 */
export function liveWorkloadFetch(workload: LiveWorkload, base: UpstreamFetch | undefined): UpstreamFetch {
  const send = base ?? defaultUpstreamClient().fetch;
  const checkConnection = () => workload.checkConnection();
  return async (url, init) => {
    await workload.assertRunning();
    const response = await send(url, { ...init, checkConnection });
    try {
      await workload.assertRunning();
    } catch (err) {
      await response.body?.cancel().catch(() => {});
      throw err;
    }
    return response;
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
    if (SERVING.has(state) && status?.pid !== undefined && isSupervisorOf(status.pid, name)) return status.pid;
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
