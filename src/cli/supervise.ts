/**
 * `mcpmgr __supervise NAME` (hidden): the detached process behind a workload. It runs
 * the workload as recorded, keeps its status file true, writes the server's output to
 * the workload log, restarts a crashed server with exponential backoff on the same
 * port, and stops everything on SIGTERM.
 */
import { appendFileSync } from "node:fs";
import { defineCommand } from "citty";
import { parseRunArgv } from "../config/run-spec.ts";
import { McpmgrError } from "../errors.ts";
import { planRun } from "./run-plan.ts";
import { resolvePaths } from "../state/paths.ts";
import { WorkloadStore } from "../state/workloads.ts";
import { log } from "./output.ts";
import { untilSignal } from "./signals.ts";
import { startWorkload, type RunningWorkload } from "./workload-runner.ts";

const firstBackoffMs = 1_000;
const maxBackoffMs = 30_000;
/** A server that ran this long before crashing starts over with the short backoff. */
const stableAfterMs = 60_000;

export default defineCommand({
  meta: { name: "__supervise", description: "internal: serve a detached workload", hidden: true },
  async run({ rawArgs }) {
    const name = rawArgs[0];
    if (name === undefined)
      throw new McpmgrError("INVALID_ARGUMENT", "__supervise needs a workload name", {
        hint: "this command is internal to mcpmgr",
      });
    await supervise(name);
  },
});

async function supervise(name: string): Promise<void> {
  const store = new WorkloadStore(resolvePaths());
  const record = await store.getExisting(name);
  if (record.workingDir) process.chdir(record.workingDir);
  const parsed = parseRunArgv(record.runOptions);
  const plan = await planRun(parsed);
  const logFile = store.logPath(name);
  const onServerOutput = (text: string) => appendFileSync(logFile, text, { mode: 0o600 });

  let stopping = false;
  const signal = untilSignal().then(() => (stopping = true));
  let restarts = 0;
  let backoff = firstBackoffMs;
  let started = false;
  await store.writeStatus(name, { state: "starting", pid: process.pid, restarts });

  while (!stopping) {
    let workload: RunningWorkload;
    const startedAt = performance.now();
    try {
      workload = await startWorkload(plan, parsed, { onServerOutput, supervised: true });
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      if (!started) {
        // The first start failing is an error for `run` to report, not something to retry.
        await store.writeStatus(name, { state: "failed", pid: process.pid, restarts, lastError: reason });
        log.error(reason);
        process.exit(1);
      }
      await store.writeStatus(name, { state: "restarting", pid: process.pid, restarts, lastError: reason });
      await Promise.race([Bun.sleep(backoff), signal]);
      backoff = Math.min(backoff * 2, maxBackoffMs);
      restarts++;
      continue;
    }
    started = true;
    await store.writeStatus(name, { state: "running", pid: process.pid, restarts });
    log.info(`${name} running at ${workload.url}`);
    const outcome = await Promise.race([signal.then(() => undefined), workload.exited]);
    await workload.stop();
    if (outcome === undefined) break;
    log.warn(`${name}: ${outcome}`);
    if (performance.now() - startedAt > stableAfterMs) backoff = firstBackoffMs;
    await store.writeStatus(name, {
      state: "restarting",
      pid: process.pid,
      restarts,
      lastError: outcome.split("\n")[0] ?? outcome,
    });
    await Promise.race([Bun.sleep(backoff), signal]);
    backoff = Math.min(backoff * 2, maxBackoffMs);
    restarts++;
  }
  await store.writeStatus(name, { state: "stopped", restarts }).catch(() => {});
  log.info(`${name} stopped`);
}
