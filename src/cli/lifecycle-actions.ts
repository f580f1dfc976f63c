/**
 * What `start`, `restart`, `stop` and `rm` do to one workload and say about it, whether it was named
 * alone or is one of several (cli/lifecycle-batch.ts). Named alone, `start` prints the URL on stdout
 * (`URL=$(mcpmgr start NAME)`); one of several says it in its line, since bare URLs would not say
 * whose they are.
 */
import { WorkloadStore } from "../state/workloads.ts";
import type { WorkloadContext } from "../workload/context.ts";
import { removeRecorded, startRecorded, stopRecorded } from "../workload/lifecycle.ts";
import { log, printResult } from "./output.ts";
import { workloadUrl } from "./workload-arg.ts";

/** Starts (or restarts) `name`; `several`: one of a batch, whose relayed supervisor lines carry its name. */
export async function startOne(name: string, restart: boolean, ctx: WorkloadContext, several = false): Promise<void> {
  // Loaded here: what it recognises in a supervisor's log (OAuth, gateway, plain-http markers) pulls in
  // modules `stop` and `rm`, which share this file, have no use for.
  const { startRelay } = await import("./start-relay.ts");
  const relay = startRelay(new WorkloadStore(ctx.paths).logFiles(name, "proxy"), several ? `${name}: ` : "");
  let spawned = false;
  const beforeSpawn = () => {
    spawned = true;
    relay.fromHere();
  };
  const { record, alreadyRunning, byAnother } = await startRecorded(
    name,
    { restart, whileWaiting: relay.whileWaiting, beforeSpawn },
    ctx,
  ).catch(async (err: unknown) => {
    // A start that fails a moment after its supervisor warned (within one 100 ms look at the log):
    // what it wrote before the failure is shown first, as it would have been while waiting.
    if (spawned) await relay.ready();
    throw err;
  });
  if (!alreadyRunning) await relay.ready();
  const another = `${name} was started by another mcpmgr command at the same moment`;
  if (several) {
    if (byAnother) return log.info(`${another}; it runs at ${workloadUrl(record)}`);
    return log.info(
      `${alreadyRunning ? `${name} is already running` : `${restart ? "restarted" : "started"} ${name}`} at ${workloadUrl(record)}`,
    );
  }
  // The URL either way: `URL=$(mcpmgr start NAME)` must not depend on whether it ran already.
  if (byAnother) log.info(`${another}; MCP clients connect to:`);
  else log.info(`${name} is ${alreadyRunning ? "already running" : "running"}; MCP clients connect to:`);
  printResult(workloadUrl(record));
}

export async function stopOne(name: string, ctx: WorkloadContext): Promise<void> {
  const stopped = await stopRecorded(name, ctx);
  log.info(stopped ? `stopped ${name}` : `${name} was not running`);
}

/**
 * Removes `name`. The OAuth login of a remote stays (other workloads of the remote share it): says
 * which `oauth-` secrets hold it and how to forget them.
 */
export async function removeOne(name: string, ctx: WorkloadContext): Promise<void> {
  const record = await removeRecorded(name, ctx);
  log.info(`removed ${name}`);
  // Only a remote logs in with OAuth: the secrets store and the run options' parser are loaded for one alone.
  if (record?.runtime !== "remote") return;
  const [{ keptLoginsLine }, { createSecretManager }] = await Promise.all([
    import("../workload/kept-logins.ts"),
    import("../secrets/manager.ts"),
  ]);
  const { paths, env } = ctx;
  const kept = await keptLoginsLine(record, {
    env,
    paths,
    secrets: () => createSecretManager({ dir: paths.dataDir, env }),
  });
  if (kept !== undefined) log.info(kept);
}
