/**
 * The supervisor: the detached mcpmgr process behind a background workload (`mcpmgr
 * __supervise NAME`). It runs the workload as recorded, keeps its status file true, writes
 * the server's output to the workload log (rotated at a size cap), restarts a crashed server
 * with exponential backoff on the same port, and stops everything when asked to. The port is held for the
 * supervisor's whole life: while the server starts or restarts, the listener answers 503
 * with Retry-After and a JSON-RPC error, and no other process can take the port (and the
 * tokens clients send to it). A background gateway is hosted the same way, with the
 * gateway's start in place of `startWorkload` (it holds its own port). The AI clients
 * following the workload's group are told each time it runs and when it stops.
 */
import { errorMessage, isMcpmgrError, McpmgrError } from "../errors.ts";
import { stateIoError } from "../state/atomic-file.ts";
import { bestEffortLog, cappedLog, endsMidLine } from "../state/log-files.ts";
import type { WorkloadState } from "../state/workload-record.ts";
import { type WorkloadRecord, WorkloadStore } from "../state/workloads.ts";
import { clientsSeeStarted, clientsSeeStopped } from "./client-entries.ts";
import type { WorkloadContext, WorkloadLog } from "./context.ts";
import { keptStatusReporter } from "./kept-status.ts";
import { assertStartSettings, maxLogBytesFromEnv } from "./limits.ts";
import { LAST_OUTPUT } from "./server-output.ts";
import { claimStart } from "./start-claim.ts";
import { cancelGraceMs } from "./supervisor-control.ts";
import { enterWorkingDir, resolveRecorded } from "./recorded-spec.ts";
import { keepListener } from "./kept-listener.ts";
import { startWorkload, type RunningWorkload } from "./start.ts";

export interface RestartTimings {
  readonly firstBackoffMs: number;
  readonly maxBackoffMs: number;
  /** A server that ran this long before crashing starts over with the short backoff. */
  readonly stableAfterMs: number;
}

const defaultRestartTimings: RestartTimings = {
  firstBackoffMs: 1_000,
  maxBackoffMs: 30_000,
  stableAfterMs: 60_000,
};

export interface StatusReport {
  readonly state: WorkloadState;
  readonly restarts: number;
  readonly lastError?: string;
  /** Stopping with requests in progress (state/workload-record.ts). */
  readonly draining?: boolean;
  /** Running with secret values it redacts (state/workload-record.ts). */
  readonly holdsSecrets?: true;
  /** The failure's own hint (a busy port: choose another), for `run`/`start` to print instead of a generic one. */
  readonly lastHint?: string;
  /** The failure's code, when it is an McpmgrError. */
  readonly lastCode?: string;
  /** The failure's details (a server's last output), for `run`/`start` to print below the error. */
  readonly lastDetails?: string;
}

/** lastError and, when the error has them, lastHint and lastCode: what a failed start reports. */
function failure(err: unknown): Pick<StatusReport, "lastError" | "lastHint" | "lastCode" | "lastDetails"> {
  const hint = isMcpmgrError(err) ? err.hint : undefined;
  const details = isMcpmgrError(err) ? err.details : undefined;
  return {
    lastError: errorMessage(err),
    ...(hint ? { lastHint: hint } : {}),
    ...(isMcpmgrError(err) ? { lastCode: err.code } : {}),
    ...(details ? { lastDetails: details } : {}),
  };
}

export interface RestartLoopOptions {
  readonly name: string;
  /** One start; `signal` is aborted when the supervisor is asked to stop while it is under way. */
  readonly start: (signal: AbortSignal) => Promise<RunningWorkload>;
  /** Records the workload's status (the supervisor's status file). */
  readonly report: (status: StatusReport) => Promise<unknown>;
  /** Resolves when the supervisor is asked to stop. */
  readonly stopping: Promise<unknown>;
  readonly log: WorkloadLog;
  readonly timings?: RestartTimings;
  readonly sleep?: (ms: number) => Promise<unknown>;
  readonly now?: () => number;
  /** Called before each wait between starts, with its length. */
  readonly onBackoff?: (ms: number) => void;
  /** How often a status that could not be written is tried again (STATUS_RETRY_MS). */
  readonly statusRetryMs?: number;
  /** How long a start cut short by a stop may take to undo what it created (a real clock: 3 s, or cancelGraceMs). */
  readonly cancelGraceMs?: number;
}

/**
 * A start raced with the stop request: asked to stop, the start's signal is aborted (it stops
 * the server it launched, the pull or build under way, a login waiting for the browser) and it
 * gets `graceMs` to wind down; a workload it still brought up meanwhile is stopped here.
 * Undefined when stopped; whatever is left after the grace dies with this process or is
 * removed by label (containers) by the `stop` that asked. A container start's grace covers a
 * slow engine's create, which it removes once answered (a create answered after this process
 * exited would come after `stop`'s removal).
 */
async function startUnlessStopped(
  start: Promise<RunningWorkload>,
  stopped: Promise<unknown>,
  graceMs: number,
): Promise<RunningWorkload | undefined> {
  const settled = start.then(
    (workload) => ({ workload }),
    (error: unknown) => ({ error }),
  );
  const first = await Promise.race([settled, stopped.then(() => undefined)]);
  if (first === undefined) {
    const late = await Promise.race([settled, Bun.sleep(graceMs).then(() => undefined)]);
    if (late !== undefined && "workload" in late) await late.workload.stop();
    return undefined;
  }
  if ("error" in first) throw first.error;
  return first.workload;
}

/**
 * Starts the workload and restarts it whenever it stops on its own, until `stopping`; returns
 * how many restarts it took. The first start failing is an error for `run` to report, not
 * something to retry: it is reported as "failed" and thrown. Later failures are retried.
 */
export async function restartLoop(options: RestartLoopOptions): Promise<number> {
  const timings = options.timings ?? defaultRestartTimings;
  const sleep = options.sleep ?? ((ms: number) => Bun.sleep(ms));
  const now = options.now ?? (() => performance.now());
  let stopping = false;
  const cancel = new AbortController();
  const stopped = options.stopping.then(() => {
    stopping = true;
    cancel.abort(new McpmgrError("CANCELLED", `${options.name} was stopped while it was starting`));
  });
  let restarts = 0;
  let backoff = timings.firstBackoffMs;
  let started = false;
  const pause = async () => {
    options.onBackoff?.(backoff);
    await Promise.race([sleep(backoff), stopped]);
    backoff = Math.min(backoff * 2, timings.maxBackoffMs);
    restarts++;
  };
  await options.report({ state: "starting", restarts });
  // Once the workload served, a status that cannot be written (a full disk) is retried, not fatal:
  // the supervisor goes on serving and restarting its server.
  const kept = keptStatusReporter(options.name, options.report, options.log, options.statusRetryMs);
  let servedOnce = false;
  const report = async (status: StatusReport) => {
    if (servedOnce) return kept.report(status);
    await options.report(status);
    if (status.state === "running") servedOnce = true;
  };
  try {
    return await loop();
  } finally {
    kept.close();
  }

  async function loop(): Promise<number> {
    while (!stopping) {
      let workload: RunningWorkload | undefined;
      const startedAt = now();
      try {
        workload = await startUnlessStopped(options.start(cancel.signal), stopped, options.cancelGraceMs ?? 3_000);
      } catch (err) {
        // A start that failed because it was told to stop is no failure: the workload is stopped.
        if (stopping) break;
        if (!started) {
          await options.report({ state: "failed", restarts, ...failure(err) });
          throw err;
        }
        // In the log as well as the status (whose lastError the next state replaces): an operator reading the log
        // after a night of restarts sees why each attempt failed, with the server's last output indented below
        // (where the failure's hint points) as for a crash.
        options.log.warn(
          [
            `${options.name}: restarting failed: ${errorMessage(err)}${hintOf(err)}; trying again in ${formatDelay(backoff)}`,
            ...detailLines(err),
          ].join("\n"),
        );
        await report({ state: "restarting", restarts, lastError: errorMessage(err) });
        await pause();
        continue;
      }
      if (workload === undefined) break;
      started = true;
      const secrets = workload.holdsSecrets === true ? ({ holdsSecrets: true } as const) : {};
      await report({ state: "running", restarts, ...secrets });
      options.log.info(`${options.name} running at ${workload.url}`);
      const outcome = await Promise.race([stopped.then(() => undefined), workload.exited]);
      // A crash: started again, its listener (if kept) stays. A stop with requests in progress says so (`stop`'s notice).
      const draining = () => report({ state: "running", restarts, draining: true, ...secrets });
      await workload.stop(outcome === undefined ? { onRequestsInProgress: draining } : { restarting: true });
      if (outcome === undefined) break;
      if (now() - startedAt > timings.stableAfterMs) backoff = timings.firstBackoffMs;
      // The server's last output below the reason, each line indented (as the CLI shows an error's
      // details): no line of the server's starts a line of the proxy log, so none reads as one of
      // mcpmgr's own (`run` shows a login URL it finds there). The reason says when the restart is,
      // as a failed restart's line does: every exit is restarted until a stop.
      const [reason = outcome, ...output] = outcome.split("\n");
      options.log.warn(
        [`${options.name}: ${withNextAttempt(reason, backoff)}`, ...output.map((line) => `  ${line}`)].join("\n"),
      );
      await report({ state: "restarting", restarts, lastError: outcome.split("\n")[0] ?? outcome });
      await pause();
    }
    return restarts;
  }
}

/** An exit's reason with when the restart is, before the server's last output that may follow it. */
function withNextAttempt(reason: string, backoff: number): string {
  const next = `; restarting in ${formatDelay(backoff)}`;
  return reason.endsWith(LAST_OUTPUT)
    ? `${reason.slice(0, -LAST_OUTPUT.length)}${next}${LAST_OUTPUT}`
    : `${reason}${next}`;
}

/** A backoff as a person reads it: "500 ms", "2 s". */
function formatDelay(ms: number): string {
  return ms < 1_000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`;
}

/**
 * Serves the recorded workload `name` until `stopping`; throws when its first start fails.
 * `startedBy`: the command that spawned this process, as STARTED_BY_ENV named it (see start-claim.ts `claimStart`).
 */
export async function supervise(
  name: string,
  ctx: WorkloadContext,
  stopping: Promise<unknown>,
  startedBy?: string,
): Promise<void> {
  const store = new WorkloadStore(ctx.paths);
  const record = await store.getExisting(name);
  const report = async (status: StatusReport) => {
    await store.writeStatus(name, { ...status, pid: process.pid });
    if (status.state !== "running" || status.draining) return;
    // After the status says running (not a stop's draining one): a `client register` at the same moment
    // either sees it running or is seen here.
    await clientsSeeStarted(record, ctx);
    // What the start parsed, decoded and handshook is garbage now: collected at once, so an
    // idle workload holds what it serves with, not its start-up's leftovers (bench footprint).
    Bun.gc(true);
  };
  let started: Awaited<ReturnType<typeof starter>> | undefined;
  try {
    // Its pid at once, as the command that spawned it does: should that command end before it writes
    // it, the start would read as abandoned (reconcileStatus) while a registry entry is resolved.
    if (!(await claimStart(store, name, startedBy))) {
      ctx.log.info(`${name} was stopped (or started again elsewhere) before its supervisor began`);
      return;
    }
    // Relative paths in the run options mean what they meant where the workload was created.
    if (record.workingDir) enterWorkingDir(record.workingDir);
    // Resolving a registry entry may take a while: a stop meanwhile is not kept waiting.
    started = await Promise.race([starter(record, ctx, store), stopping.then(() => undefined)]);
  } catch (err) {
    await report({ state: "failed", restarts: 0, ...failure(err) });
    throw err;
  }
  if (started === undefined) {
    await store.writeStatus(name, { state: "stopped", restarts: 0 }).catch(() => {});
    ctx.log.info(`${name} stopped while it was starting`);
    return;
  }
  const { listener } = started;
  let restarts: number;
  try {
    restarts = await restartLoop({
      name,
      start: started.start,
      report,
      stopping,
      log: ctx.log,
      cancelGraceMs: cancelGraceMs(record.runtime),
      ...(listener ? { onBackoff: listener.backoff } : {}),
    });
  } finally {
    await listener?.server.shutdown();
  }
  await clientsSeeStopped(name, ctx);
  await store.writeStatus(name, { state: "stopped", restarts }).catch(() => {});
  ctx.log.info(`${name} stopped`);
}

/** How the recorded workload starts (its RunSpec resolved once, or a background gateway's spec), and the listener it keeps. */
async function starter(
  record: WorkloadRecord,
  ctx: WorkloadContext,
  store: WorkloadStore,
): Promise<{ start: (signal: AbortSignal) => Promise<RunningWorkload>; listener?: ReturnType<typeof keepListener> }> {
  // All of them, including those only this process reads (the proxy log's cap, in cli/supervise.ts).
  assertStartSettings(ctx.env, record.runtime);
  const resolved = await resolveRecorded(record, ctx);
  if (resolved.kind === "gateway") {
    const { startGatewayWorkload } = await import("./gateway.ts");
    return { start: () => startGatewayWorkload(resolved.spec, ctx) };
  }
  const spec = resolved.spec;
  const name = record.name;
  const listener = keepListener(spec, ctx);
  // A remote has no server output: its audit lines go where its other lines go, the proxy log, which
  // is what `mcpmgr logs` shows for it (as for a gateway).
  if (spec.placement.kind === "remote")
    return { start: (signal) => startWorkload(spec, ctx, { supervised: true, listener, signal }), listener };
  const logPath = store.logPath(name);
  const workloadLog = bestEffortLog(
    cappedLog(logPath, store.rotatedLogPath(name), maxLogBytesFromEnv(ctx.env)),
    (err) =>
      ctx.log.warn(
        `${name}: ${stateIoError("write", logPath, err).message}; the server's output is dropped until it can be written`,
      ),
  );
  return {
    start: (signal) => {
      // Where each run begins in `mcpmgr logs NAME` (the server's own lines carry no time, and a restarted
      // server says the same things again); the name and the time only, nothing of its options.
      workloadLog(runMarker(name, endsMidLine(logPath)));
      return startWorkload(spec, ctx, { workloadLog, supervised: true, listener, signal });
    },
    listener,
  };
}

/**
 * The line that opens each run of a workload in its server log: on a line of its own, also after a
 * server that exited in the middle of a line (`midLine`).
 */
function runMarker(name: string, midLine: boolean, at = new Date()): string {
  return `${midLine ? "\n" : ""}mcpmgr: ---- ${name} starts, ${at.toISOString()} ----\n`;
}

/** A failure's details (a server's last output), each line indented. */
function detailLines(err: unknown): string[] {
  const details = isMcpmgrError(err) ? err.details : undefined;
  return (details ?? "")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => `  ${line}`);
}

/** An McpmgrError's hint, as the CLI prints it after the message; nothing for other errors. */
function hintOf(err: unknown): string {
  return isMcpmgrError(err) && err.hint !== undefined ? ` (hint: ${err.hint})` : "";
}
