/**
 * Starting and stopping a workload's supervisor: the detached copy of mcpmgr that
 * serves the proxy and restarts the server when it crashes.
 */
import { closeSync, openSync } from "node:fs";
import { errorMessage, isMcpmgrError, McpmgrError } from "../errors.ts";
import { ensureDir } from "../state/atomic-file.ts";
import { isSupervisorOf } from "../state/supervisor-identity.ts";
import type { RuntimeKind, WorkloadRecord, WorkloadStatus } from "../state/workload-record.ts";
import type { WorkloadStore } from "../state/workloads.ts";
import type { WorkloadContext, WorkloadLog } from "./context.ts";
import { selfCommand } from "./self-command.ts";
import {
  currentStatus,
  recordSupervisorPid,
  StartedElsewhere,
  STARTED_BY_ENV,
  afterStopped,
  StartedAgainWhileStopping,
  startedElsewhere,
  startUnderWay,
  stopOvertaken,
  thisCommand,
} from "./start-claim.ts";
import { recordedRuntimeEnv } from "./recorded-runtime.ts";
import {
  killedElsewhere,
  removedWhileStarting,
  restartedWhileStarting,
  stoppedElsewhere,
  stoppedWhileStarting,
} from "./start-overtaken.ts";
import { removeContainers, terminate } from "./supervisor-teardown.ts";

/** Longer than the bridge's handshake timeout, which covers npx/uvx downloading the package. */
const baseReadyTimeoutMs = 200_000;
/** Still starting after this long, the command says so once: minutes without a word read as a hang. */
const stillStartingNoticeMs = 15_000;

/**
 * An image run without --transport is spoken to over stdio; one whose server listens on HTTP
 * instead never answers there, and its start waits the whole timeout without a clue.
 */
function httpImageNote(record: WorkloadRecord): string {
  if (record.source.kind !== "image" || record.transport !== "stdio") return "";
  return `; it is spoken to over stdio: if the image serves MCP over HTTP, run it with --transport streamable-http (or sse) and --target-port PORT`;
}
/**
 * Beyond the login itself, a remote workload's start-up makes bounded requests of its own
 * (the probe of the remote, metadata, discovery, registration, the code exchange: 15 s each
 * at most).
 */
const loginMarginMs = 120_000;

/**
 * How long `run`/`start` wait for the supervisor: a remote workload's OAuth login happens
 * inside it and may take the whole --remote-auth-timeout the user asked for — twice when it
 * first waits for another mcpmgr's login to free the callback port. Generous on purpose: a
 * supervisor whose login fails or times out reports it at once; this only bounds a hang.
 */
export function supervisorReadyTimeoutMs(runOptions: readonly string[]): number {
  let loginTimeoutMs = 0;
  try {
    // Required here, not imported: the run options' tables are built when loaded, which `list` and `stop` need not pay for.
    const { parseRunArgv } = require("../config/run-argv.ts") as typeof import("../config/run-argv.ts");
    loginTimeoutMs = parseRunArgv(runOptions).values["remote-auth-timeout"];
  } catch {
    // The supervisor parses them again and reports what is wrong; the base wait is enough for that.
  }
  return Math.max(baseReadyTimeoutMs, 2 * loginTimeoutMs + loginMarginMs);
}

/**
 * How long a supervisor's start, cut short by a stop, gets to undo what it created before the
 * supervisor gives up on it and exits. A container start waits for the engine's answers: a create
 * the engine is still working on when the supervisor exits would be made after `stop` removed the
 * workload's containers by label, and be left behind; a slow engine gets 10 s for it (less than
 * `stop`'s 15 s before SIGKILL). Other starts stop their server at once: 3 s is plenty.
 */
export function cancelGraceMs(runtime: RuntimeKind): number {
  return runtime === "docker" || runtime === "podman" ? 10_000 : 3_000;
}

export { currentStatus };

export interface StartSupervisorOptions {
  /** What to tell the user when the workload does not start. */
  readonly failureHint?: string;
  /** Added to the failure's own hint when it has one (`run`: the workload was not kept). */
  readonly failureNote?: string;
  /** Called every 100 ms while waiting (`run` relays an OAuth login URL from the proxy log). */
  readonly whileWaiting?: () => void;
  /**
   * Called just before the supervisor is spawned: what the log holds up to here is not its (a `restart`
   * stopped the one before, which may have logged a start of its own meanwhile).
   */
  readonly beforeSpawn?: () => void;
  /** Aborted (Ctrl-C in `run`): the supervisor is stopped and CANCELLED thrown. */
  readonly signal?: AbortSignal;
}

/** Starts the supervisor and waits until the workload runs (or reports why it did not). */
export async function startSupervisor(
  store: WorkloadStore,
  name: string,
  ctx: WorkloadContext,
  options: StartSupervisorOptions = {},
): Promise<void> {
  const failureHint = options.failureHint ?? `see 'mcpmgr logs ${name}' and 'mcpmgr logs ${name} --proxy'`;
  await ensureDir(store.paths.logDir);
  // Written before the supervisor exists, so a stale "failed" or "running" is never read as its answer;
  // with this command's identity, so that if it ends before the supervisor's pid is written (a closed
  // terminal, SIGKILL) the start reads as failed rather than "starting" for good (reconcileStatus).
  // Not over another start under way (a `start` or `restart` elsewhere at the same moment): two
  // supervisors would race for the port, and the loser's "failed" could hide the winner, which
  // `stop` and `rm` would then never find.
  let under: string | undefined;
  const me = thisCommand();
  await store.writeStatus(
    name,
    { state: "starting", startedBy: me },
    { onlyIf: (current) => (under = startUnderWay(current, name, store)) === undefined },
  );
  if (under !== undefined) throw new StartedElsewhere(`${name} was started elsewhere at the same moment: ${under}`);
  // Its stdout and stderr: what it prints goes through the capped proxy log (cli/supervise.ts);
  // this catches what it cannot print that way (an error before that is set up, a runtime crash).
  // The log is rotated in place, so these descriptors stay on it (state/log-files.ts `cappedLog`).
  const out = openSync(store.proxyLogPath(name), "a", 0o600);
  const [command, ...args] = selfCommand("__supervise", name);
  const record = await store.getExisting(name);
  const runtime = recordedRuntimeEnv(record);
  const { spawn } = await import("node:child_process");
  options.beforeSpawn?.();
  const child = spawn(command as string, args, {
    detached: true,
    stdio: ["ignore", out, out],
    env: { ...ctx.env, NO_COLOR: "1", ...runtime, [STARTED_BY_ENV]: `${me.pid}:${me.startTime}` },
  });
  // A spawn that fails (mcpmgr's executable removed or replaced by an upgrade meanwhile, no processes
  // left for the user) has no pid and says why in an "error" event, which unheard ends this command
  // with a stack trace, and left unread would have it wait the whole ready timeout for nothing.
  const spawnFailure = new Promise<unknown>((resolve) => child.once("error", resolve));
  closeSync(out);
  child.unref();
  const pid = child.pid;
  if (pid === undefined) {
    const why = errorMessage(await Promise.race([spawnFailure, Bun.sleep(1_000).then(() => "no process id")]));
    const lastError = `its supervisor could not be started: ${why}`;
    await store
      .writeStatus(
        name,
        { state: "failed", lastError },
        { onlyIf: (current) => current?.state === "starting" && current.pid === undefined },
      )
      .catch(() => {});
    throw new McpmgrError("SERVER_FAILED", `${name} failed to start: ${lastError}`, {
      hint: `mcpmgr could not run ${command} (upgraded or moved meanwhile?): run the command again; ${failureHint}`,
    });
  }
  await recordSupervisorPid(store, name, pid);

  const readyTimeoutMs = supervisorReadyTimeoutMs(record.runOptions);
  const deadline = performance.now() + readyTimeoutMs;
  // Not for a remote: its OAuth login, relayed by the command, is what it waits for.
  let noticeAt = record.runtime === "remote" ? Number.POSITIVE_INFINITY : performance.now() + stillStartingNoticeMs;
  while (performance.now() < deadline) {
    await Bun.sleep(100);
    if (performance.now() > noticeAt) {
      noticeAt = Number.POSITIVE_INFINITY;
      ctx.log.info(
        `${name} is still starting: its server has not answered yet (a first start may be downloading its package; ` +
          `it is given ${Math.round(readyTimeoutMs / 60_000)} min); 'mcpmgr logs ${name}' shows what it printed so far` +
          httpImageNote(record),
      );
    }
    if (options.signal?.aborted) {
      // The supervisor gives its start up and exits within its cancel grace (a little more to exit):
      // killed sooner, a container create under way could be made after the removal below.
      if (pid !== undefined) await terminate(store, pid, name, cancelGraceMs(record.runtime) + 2_000);
      await removeContainers(store, name, ctx.log);
      throw new McpmgrError("CANCELLED", `${name}: stopped while it was starting (${String(options.signal.reason)})`);
    }
    options.whileWaiting?.();
    const status = await currentStatus(store, name);
    // `mcpmgr stop NAME` (or `rm`, which stops it first) elsewhere while it started: what was asked for.
    // A `restart`'s stop is followed by its start, which is the answer (its containers removed first);
    // the 2 s watch is for an unmarked "stopped" only (our supervisor's own; an older version's stop).
    if (status?.state === "stopped")
      throw await afterStopped(
        store,
        name,
        stoppedWhileStarting(name),
        () => stoppedElsewhere(store, name, pid),
        2_000,
        options.signal,
      );
    if (status?.state === "running") {
      try {
        // Loaded here: `list` evaluates this module and must stay light.
        const { confirmAnswers } = await import("./mcp-readiness.ts");
        await confirmAnswers(store, name, failureHint);
      } catch (err) {
        // A stopping supervisor still answers the requests in progress (the probe's), then closes its port:
        // the command that stops it records that once it is gone, and that is what to report.
        const closing =
          isMcpmgrError(err) &&
          isMcpmgrError(err.cause) &&
          (err.cause.code === "WORKLOAD_NOT_RUNNING" || err.cause.code === "WORKLOAD_ENDED_DURING_REQUEST");
        if (closing) await supervisorGone(store, pid, name, cancelGraceMs(record.runtime) + 17_000);
        // A stop or rm elsewhere meanwhile is what was asked for, not a server that does not answer.
        let overtaken = await stoppedElsewhere(store, name, pid);
        // The stopping command records "stopped" a moment after the supervisor is gone.
        for (let tries = 0; closing && overtaken === undefined && tries < 40; tries++) {
          await Bun.sleep(50);
          overtaken = await stoppedElsewhere(store, name, pid);
        }
        if (overtaken !== undefined) throw overtaken;
        // A start elsewhere since ours stopped is that command's; what this start reports is its own failure.
        await stopSupervisor(store, name, ctx.log).catch((stopErr: unknown) => {
          if (!(stopErr instanceof StartedAgainWhileStopping)) throw stopErr;
        });
        throw err;
      }
      const overtaken = await stoppedElsewhere(store, name, pid);
      if (overtaken !== undefined) throw overtaken;
      return;
    }
    // `mcpmgr restart NAME` (or stop and start) elsewhere: ours was stopped and another start is
    // under way. Its outcome is that command's to report; failing here would undo it (record, containers).
    if (pid !== undefined && startedElsewhere(status, pid) && !isSupervisorOf(pid, name, store.paths))
      throw restartedWhileStarting(name);
    if (status?.state === "failed" || (pid !== undefined && !isSupervisorOf(pid, name, store.paths))) {
      // `mcpmgr rm NAME` elsewhere while it started: nothing to report a failure into.
      if ((await store.get(name).catch(() => null)) === undefined) throw removedWhileStarting(name);
      const overtaken = await killedElsewhere(store, name, pid, options.signal);
      if (overtaken !== undefined) throw overtaken;
      // Read again: it may have reported just before it exited.
      const last = status?.state === "failed" ? status : await currentStatus(store, name);
      // Gone before it reported: its "starting" must not stay in `list` for a workload nothing serves.
      if (last?.state !== "failed") {
        await store
          .writeStatus(name, { state: "failed", lastError: "the supervisor exited before it reported" })
          .catch(() => {});
      }
      await removeContainers(store, name, ctx.log);
      const reported = last?.state === "failed" ? last : undefined;
      throw new McpmgrError(
        "SERVER_FAILED",
        `${name} failed to start: ${reported?.lastError ?? "the supervisor exited"}`,
        // The failure's own advice (a busy port: choose another) says more than the generic one.
        {
          hint: reported?.lastHint ? withNote(reported.lastHint, options.failureNote) : failureHint,
          ...(reported?.lastDetails ? { details: reported.lastDetails } : {}),
          // The failure as the supervisor met it, for the command to word its own way out (startFailureCode).
          ...(reported?.lastCode ? { cause: { code: reported.lastCode, message: reported.lastError } } : {}),
        },
      );
    }
  }
  // Nothing may keep running behind a failed run (terminate may have had to SIGKILL).
  if (pid !== undefined) await terminate(store, pid, name);
  await removeContainers(store, name, ctx.log);
  throw new McpmgrError("SERVER_FAILED", `${name} did not become ready within ${readyTimeoutMs / 1000} s`, {
    hint: failureHint,
  });
}

/** Waits (at most `ms`) until the supervisor `pid` has exited. */
async function supervisorGone(store: WorkloadStore, pid: number, name: string, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (isSupervisorOf(pid, name, store.paths) && performance.now() < deadline) await Bun.sleep(50);
}

/**
 * The code of what made a start fail: the error's own, or for a supervisor's failed start
 * (SERVER_FAILED) the one it reported (a taken container name is WORKLOAD_EXISTS there too).
 */
export function startFailureCode(err: unknown): string | undefined {
  if (!isMcpmgrError(err)) return undefined;
  const reported = err.cause as { readonly code?: unknown } | undefined;
  return err.code === "SERVER_FAILED" && typeof reported?.code === "string" ? reported.code : err.code;
}

function withNote(hint: string, note: string | undefined): string {
  return note ? `${hint} (${note})` : hint;
}

/**
 * SIGTERM to the supervisor, which stops the proxy and the server; SIGKILL if it hangs. The "stopped"
 * it writes names this command, for a start it overtakes: `restarting`, this command starts it again
 * next (`restartedBy`), which that start waits for (`restartFollows`); `removing`, it removes the
 * record next, also waited for; else a plain stop (`stoppedBy`), which that start reports at once.
 * Another command's start that comes in before that record (`stopOvertaken`) is left to run: a restart
 * then waits for it (its own start finds it under way), a removal stops it too (the record goes), and
 * a plain stop says so (`StartedAgainWhileStopping`, exit 1).
 */
export async function stopSupervisor(
  store: WorkloadStore,
  name: string,
  log: WorkloadLog,
  options: { readonly restarting?: boolean; readonly removing?: boolean } = {},
): Promise<boolean> {
  const mark: Pick<WorkloadStatus, "restartedBy" | "stoppedBy"> = options.restarting
    ? { restartedBy: thisCommand() }
    : { stoppedBy: { ...thisCommand(), ...(options.removing ? { removing: true as const } : {}) } };
  // A start that keeps coming back in between is given up on after a few rounds (it is removed regardless).
  for (let round = 0; ; round++) {
    const stopped = await stopOnce(store, name, log, mark);
    if (typeof stopped === "boolean") return stopped;
    if (options.restarting || (options.removing && round >= 2)) return true;
    if (!options.removing) throw new StartedAgainWhileStopping(name, stopped.start);
  }
}

async function stopOnce(
  store: WorkloadStore,
  name: string,
  log: WorkloadLog,
  mark: Pick<WorkloadStatus, "restartedBy" | "stoppedBy">,
): Promise<boolean | { readonly start: string }> {
  if (await stopStartWithoutSupervisor(store, name, mark)) {
    await removeContainers(store, name, log);
    return true;
  }
  const status = await currentStatus(store, name);
  const pid = status?.pid;
  // Only over what this stop ends, so that a start elsewhere meanwhile is neither hidden nor undone.
  let overtaken: ReturnType<typeof stopOvertaken>;
  const onlyIf = (current: WorkloadStatus | undefined) =>
    (overtaken = stopOvertaken(current, name, store, pid)) === undefined;
  const gone = pid === undefined || !isSupervisorOf(pid, name, store.paths);
  if (gone || status?.state === "stopped" || status?.state === "failed") {
    await removeContainers(store, name, log);
    // Asked to stop, it is stopped: a failed one (its supervisor killed, the machine restarted)
    // would otherwise stay "failed" in `list`, with the warning, until it is started or removed.
    if (status?.state === "failed") {
      await store
        .writeStatus(name, { state: "stopped", restarts: status.restarts ?? 0, ...mark }, { onlyIf })
        .catch(() => {});
    }
    return false;
  }
  const draining = async () => (await store.readStatus(name))?.draining === true;
  await terminate(store, pid, name, undefined, log, draining);
  // A `restart` or `start` elsewhere may begin once the supervisor wrote its own "stopped": written
  // over that start, this record would leave its supervisor running unseen, with no pid to stop.
  await store
    .writeStatus(name, { state: "stopped", restarts: status?.restarts ?? 0, ...mark }, { onlyIf })
    .catch((err: unknown) =>
      // Stopped all the same; said, since `list` shows it failed (a dead supervisor) until a `stop` records it.
      log.warn(
        `${name} is stopped, but that cannot be recorded: ${errorMessage(err)}${isMcpmgrError(err) && err.hint ? ` (hint: ${err.hint})` : ""}; 'mcpmgr stop ${name}' records it once it can be written`,
      ),
    );
  // That start's containers are its own (this supervisor removed its own on the way out).
  if (typeof overtaken === "object") return overtaken;
  // The supervisor removes its containers on the way out; one killed hard leaves them behind.
  await removeContainers(store, name, log);
  return true;
}

/**
 * A start in the instant between its "starting" and its supervisor's pid (the command that wrote it
 * alive, reconcileStatus says): there is no supervisor to signal yet, so "stopped" is written in its
 * place. The command's supervisor, once spawned, finds its start no longer there and exits
 * (supervisor.ts `claimStart`), and the command reports the stop. True when so stopped; false when
 * the status is anything else (by then, maybe, a supervisor's, to stop as usual).
 */
async function stopStartWithoutSupervisor(
  store: WorkloadStore,
  name: string,
  mark: Pick<WorkloadStatus, "restartedBy" | "stoppedBy">,
): Promise<boolean> {
  const status = await currentStatus(store, name);
  const starter = status?.startedBy;
  if (status?.state !== "starting" || status.pid !== undefined || starter === undefined) return false;
  if (starter.pid === process.pid) return false;
  let stopped = false;
  await store
    .writeStatus(
      name,
      { state: "stopped", restarts: status.restarts ?? 0, ...mark },
      {
        onlyIf: (current) =>
          (stopped =
            current?.state === "starting" &&
            current.pid === undefined &&
            current.startedBy?.pid === starter.pid &&
            current.startedBy.startTime === starter.startTime),
      },
    )
    .catch(() => {
      stopped = false;
    });
  return stopped;
}
