/**
 * `start`, `restart`, `stop` and `rm` of a recorded workload (or background gateway), through
 * its supervisor; the AI clients following its group get its entry back or lose it.
 */
import { errorMessage, McpmgrError } from "../errors.ts";
import { isGatewayRecord, type WorkloadRecord } from "../state/workload-record.ts";
import { WorkloadStore } from "../state/workloads.ts";
import {
  type ClientEntriesContext,
  clientsForgetRemoved,
  clientsSeeStarted,
  clientsSeeStopped,
} from "./client-entries.ts";
import { entriesGone, entryPlaces } from "./client-entry-places.ts";
import type { WorkloadContext } from "./context.ts";
import { assertStartSettings } from "./limits.ts";
import {
  currentStatus,
  type StartSupervisorOptions,
  startFailureCode,
  startSupervisor,
  stopSupervisor,
  supervisorReadyTimeoutMs,
} from "./supervisor-control.ts";
import { plainStop, removalUnderWay, restartUnderWay, StartedElsewhere } from "./start-claim.ts";

/**
 * Starts `name` on its port (stopping it first for `restart`); a workload already running is left
 * alone (`alreadyRunning`), and one another command is starting is reported as that start ends (`byAnother`).
 */
export async function startRecorded(
  name: string,
  options: { readonly restart: boolean } & Pick<StartSupervisorOptions, "whileWaiting" | "beforeSpawn">,
  ctx: WorkloadContext,
): Promise<{ readonly record: WorkloadRecord; readonly alreadyRunning: boolean; readonly byAnother?: boolean }> {
  const store = new WorkloadStore(ctx.paths);
  const record = await store.getExisting(name);
  if (options.restart) {
    try {
      assertStartSettings(ctx.env, record.runtime);
      // Loaded here: it resolves run options, files and secrets, which no other command here needs.
      const { assertRestartable } = await import("./restart-check.ts");
      await assertRestartable(record, ctx);
    } catch (err) {
      throw await notRestarted(err, store, name);
    }
    // Marked as a restart's: a start this stop overtakes waits for the start that follows.
    await stopSupervisor(store, name, ctx.log, { restarting: true });
  } else {
    const status = await currentStatus(store, name);
    if (status?.state === "running" || status?.state === "restarting") return { record, alreadyRunning: true };
    // Its supervisor on its way up (`start --all` in two terminals, the other a moment ahead): that
    // start may yet fail, so it is waited for as one a moment behind is (below), not taken as running.
    if (status?.state === "starting" && status.pid !== undefined) {
      const under = `its supervisor (pid ${status.pid}) is starting it`;
      return awaitOtherStart(new StartedElsewhere(`${name} was started elsewhere: ${under}`), store, record, ctx);
    }
    assertStartSettings(ctx.env, record.runtime);
    // The supervisor leaves this check to the command that starts it (restart's is assertRestartable's).
    const { assertOptionFileKeysUnique } = await import("./option-file-keys.ts");
    assertOptionFileKeysUnique(record);
  }
  try {
    await startSupervisor(store, name, ctx, { whileWaiting: options.whileWaiting, beforeSpawn: options.beforeSpawn });
  } catch (err) {
    // Two commands starting it at once (`start --all` in two terminals, after a reboot): both asked
    // for it to run, so the one that spawned nothing reports the other's start as it ends, rather
    // than failing (exit 1) for a workload that comes up.
    if (err instanceof StartedElsewhere) return awaitOtherStart(err, store, record, ctx);
    throw whenNameTaken(await whenPortTaken(err, record), record);
  }
  await clientsSeeStarted(record, ctx);
  return { record, alreadyRunning: false };
}

/** The start under way elsewhere, waited for: reported as ours when the workload then runs, why it did not thrown otherwise. */
async function awaitOtherStart(
  under: StartedElsewhere,
  store: WorkloadStore,
  record: WorkloadRecord,
  ctx: WorkloadContext,
) {
  // Said at once: that start may take minutes (a package download, an OAuth login), and a
  // command that says nothing meanwhile reads as hung.
  ctx.log.info(`${under.message}; waiting for that start`);
  const failed = await otherStartFailure(store, record);
  if (failed === undefined) return { record, alreadyRunning: true, byAnother: true };
  throw failed;
}

/**
 * Waits for the start under way elsewhere to end (at most as long as a start of ours would wait):
 * undefined when the workload then runs, else why it does not, in words that say that start ended
 * (the other command reports its failure its own way; this one's exit 1 needs a reason of its own).
 */
async function otherStartFailure(store: WorkloadStore, record: WorkloadRecord): Promise<McpmgrError | undefined> {
  const { name } = record;
  const waitMs = supervisorReadyTimeoutMs(record.runOptions);
  const deadline = performance.now() + waitMs;
  let unmarkedSince: number | undefined;
  for (;;) {
    const status = await currentStatus(store, name);
    if (status?.state === "running") return notAnswering(store, name);
    // A "stopped" is that start's end only when nothing follows it: a restart's start or an rm's removal
    // follows its marked one (while that command lives), and a restart's mark may follow the unmarked one
    // the stopped supervisor writes itself (watched 2 s, as a start of our own watches it: afterStopped).
    unmarkedSince =
      status?.state === "stopped" && !plainStop(status) ? (unmarkedSince ?? performance.now()) : undefined;
    const stopFollowed =
      restartUnderWay(status) ||
      removalUnderWay(status) ||
      (unmarkedSince !== undefined && performance.now() - unmarkedSince < 2_000);
    if (status?.state === "starting" || stopFollowed) {
      if (performance.now() > deadline)
        return new StartedElsewhere(
          `${name} is still being started by another mcpmgr command after ${Math.round(waitMs / 1000)} s`,
        );
      await Bun.sleep(100);
      continue;
    }
    const why =
      status === undefined
        ? "ended with it removed"
        : status.state === "failed"
          ? `failed: ${status.lastError ?? "no reason recorded"}`
          : status.state === "stopped"
            ? "ended with it stopped (that command says why)"
            : `left it ${status.state}${status.lastError ? `: ${status.lastError}` : ""}`;
    return otherStartFailed(name, why, status?.lastHint, status?.lastCode);
  }
}

function otherStartFailed(name: string, why: string, hint?: string, code?: string): McpmgrError {
  return new McpmgrError("SERVER_FAILED", `${name} did not start: another mcpmgr command's start of it ${why}`, {
    hint: hint ?? `see 'mcpmgr logs ${name}' and 'mcpmgr logs ${name} --proxy'`,
    ...(code !== undefined ? { cause: { code, message: why } } : {}),
  });
}

/**
 * "running" is the supervisor's word, before the starting command's readiness probe: one that the
 * workload's policies refuse (a webhook) fails that start, which then stops the supervisor. So it is
 * confirmed here as our own start would have, not taken as a success the other command reports as a failure.
 */
async function notAnswering(store: WorkloadStore, name: string): Promise<McpmgrError | undefined> {
  const { confirmAnswers } = await import("./mcp-readiness.ts");
  return confirmAnswers(store, name, "").then(
    () => undefined,
    (err) => otherStartFailed(name, `failed: ${errorMessage(err)}`),
  );
}

/**
 * A start that failed while another program listens on the workload's port (one that took it
 * while the workload was stopped, or after a reboot): `start` has no port option, so the
 * server's "choose another port" says nothing; say what frees or moves it.
 */
async function whenPortTaken(err: unknown, record: WorkloadRecord): Promise<unknown> {
  if (!(err instanceof McpmgrError) || err.code !== "SERVER_FAILED") return err;
  // The supervisor has exited by now: whoever listens there is another program.
  const { portInUse } = await import("../proxy/serve.ts");
  if (!portInUse(record.proxyPort, record.host)) return err;
  return new McpmgrError("SERVER_FAILED", err.message, {
    hint: portTakenHint(record),
    ...(err.details ? { details: err.details } : {}),
  });
}

/**
 * A start that failed because the engine's name its containers (or isolated networks) take is held by
 * something else now (another installation's workload, a container not mcpmgr's): `start` has no
 * --name, so the failure's "choose another --name" says nothing; say what frees the name, or renames
 * the workload (its port and URL stay: the new record takes the port the removed one kept).
 */
function whenNameTaken(err: unknown, record: WorkloadRecord): unknown {
  if (!(err instanceof McpmgrError) || startFailureCode(err) !== "WORKLOAD_EXISTS") return err;
  return new McpmgrError(err.code, err.message, {
    hint: nameTakenHint(record),
    ...(err.details ? { details: err.details } : {}),
    ...(err.cause !== undefined ? { cause: err.cause } : {}),
  });
}

/** What frees a workload's taken container name, or renames the workload (`start`, and `list` of a failed one). */
export function nameTakenHint(record: WorkloadRecord): string {
  const { name } = record;
  return `free that name where it is held (stop or remove what holds it, if it is not needed), then 'mcpmgr start ${name}' again; or give ${name} another name: mcpmgr export ${name} ${name}.json, change "name" and the --name value in the file's runOptions, mcpmgr rm ${name}, mcpmgr run --from-config ${name}.json`;
}

/** What frees or moves a workload whose port another program listens on (`start`, and `list` of a failed one). */
export function portTakenHint(record: WorkloadRecord): string {
  const { name, proxyPort: port } = record;
  const option = isGatewayRecord(record) ? "--port" : "--proxy-port";
  return `${name} keeps port ${port} for its clients' URLs, and another program listens there now ('lsof -i :${port}' shows which): stop that program, or move ${name} to a free port: mcpmgr export ${name} ${name}.json, take ${option} and its value out of the file's runOptions, mcpmgr rm ${name}, mcpmgr run --from-config ${name}.json`;
}

/** Stops `name` (it stays recorded); false when it was not running. */
export async function stopRecorded(name: string, ctx: ClientEntriesContext): Promise<boolean> {
  const store = new WorkloadStore(ctx.paths);
  await store.getExisting(name);
  return stopTelling(store, name, ctx);
}

/**
 * Stops the supervisor and takes the entries out: the supervisor takes them out as it stops (and
 * says so in its own log only, so this says which went); one that had to be killed could not.
 */
async function stopTelling(
  store: WorkloadStore,
  name: string,
  ctx: ClientEntriesContext,
  removing = false,
): Promise<boolean> {
  const before = await entryPlaces(name, ctx);
  const stopping = stopSupervisor(store, name, ctx.log, { removing });
  // `rm` goes on past a supervisor it could not stop: the workload is forgotten regardless.
  const stopped = await (removing ? stopping.catch(() => false) : stopping);
  const gone = await entriesGone(name, before);
  if (gone.length > 0) ctx.log.info(`removed ${name} from ${gone.join(", ")}`);
  await clientsSeeStopped(name, ctx);
  return stopped;
}

/** Stops `name` if needed and forgets it: record, logs and AI-client entries. Returns the record (undefined: it was corrupt). */
export async function removeRecorded(name: string, ctx: ClientEntriesContext): Promise<WorkloadRecord | undefined> {
  const store = new WorkloadStore(ctx.paths);
  const record = await store.getExisting(name).catch(async (err) => {
    // A corrupt record must still be removable: only a truly unknown name is an error.
    if ((err as { code?: string }).code !== "STATE_CORRUPT") throw err;
    return undefined;
  });
  await stopTelling(store, name, ctx, true);
  await clientsForgetRemoved(name, ctx);
  await store.remove(name);
  // Its package's images, once no other workload of this home is from that package (dockerode only then).
  if (record?.runtime === "docker" || record?.runtime === "podman")
    await (await import("./built-images.ts")).removeBuiltImagesOf(record, ctx);
  return record;
}

/**
 * A restart refused before it stopped anything says that the workload is as it was: the error alone
 * (a missing secret, a bad setting) read as if the workload were now down.
 */
async function notRestarted(err: unknown, store: WorkloadStore, name: string): Promise<unknown> {
  if (!(err instanceof McpmgrError)) return err;
  const state = (await currentStatus(store, name).catch(() => undefined))?.state;
  // One still on its way up (a first start, another command's restart) is not running yet: its start goes on.
  const left =
    state === "running"
      ? `${name} was not restarted and goes on running`
      : state === "starting" || state === "restarting"
        ? `${name} was not restarted; the start under way goes on`
        : `nothing was started`;
  return new McpmgrError(err.code, err.message, {
    hint: err.hint ? `${err.hint}; ${left}` : left,
    cause: err.cause,
    exitCode: err.exitCode,
    ...(err.details ? { details: err.details } : {}),
  });
}
