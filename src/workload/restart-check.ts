/**
 * What `restart` checks before it stops a running workload: that the new supervisor could start
 * it. The record is resolved by the supervisor's own resolution (recorded-spec.ts): the recorded
 * working directory entered (a gateway's too), the run options resolved with the files they name,
 * on the recorded runtime; then every secret the record names is looked up. A restart that could
 * not start the workload again is refused in one line while the workload goes on running, instead
 * of leaving it down and failed. Nothing is started here and nothing is printed (but a pull's
 * progress): the supervisor says what it says as it starts. An image that is no longer on the
 * engine (removed, pruned) is pulled here, while the workload still runs: one that cannot be pulled
 * left it down and failed. So is a state folder where the start cannot record itself (read-only, full).
 */
import type { WorkloadRecord } from "../state/workload-record.ts";
import { WorkloadStore } from "../state/workloads.ts";
import type { WorkloadContext, WorkloadLog } from "./context.ts";
import { enterWorkingDir, resolveRecorded } from "./recorded-spec.ts";
import { assertSecretsResolve } from "./secret-references.ts";
import { recordedRuntimeEnv } from "./recorded-runtime.ts";

const quiet: WorkloadLog = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };

export async function assertRestartable(record: WorkloadRecord, ctx: WorkloadContext): Promise<void> {
  const resolved = await inTurn(() => resolveInWorkingDir(record, ctx));
  const placement = resolved.kind === "run" ? resolved.spec.placement : undefined;
  if (placement?.kind === "container" && placement.source.kind === "image") {
    const { ensureImage } = await import("../runtime/docker/images.ts");
    await ensureImage(placement.engine, placement.source.ref, (line) => ctx.log.info(line));
  }
  await assertSecretsResolve(record, () => ctx.secrets());
  // The start records itself under the store's lock: on a state folder made read-only or full since,
  // the stop would go through (it only warns that it cannot record itself) and the start would not.
  await new WorkloadStore(ctx.paths).assertChangeable();
}

/**
 * The process has one working directory, and the resolution awaits (group check, registry, runtime)
 * while in the workload's: restarts run side by side (`restart --all`) take turns here, or one's
 * relative paths (`npx://./pkg`, `--authz-config policy.yaml`) are read in another's directory.
 */
let turn: Promise<unknown> = Promise.resolve();
function inTurn<T>(work: () => Promise<T>): Promise<T> {
  const mine = turn.then(work, work);
  turn = mine.catch(() => {});
  return mine;
}

async function resolveInWorkingDir(record: WorkloadRecord, ctx: WorkloadContext) {
  // This command's directory, to come back to. A shell's directory removed since has none: restart
  // worked from there before it checked anything, and the supervisor enters its own anyway.
  const back = currentDir();
  try {
    if (record.workingDir) enterWorkingDir(record.workingDir);
    return await resolveRecorded(record, {
      ...ctx,
      env: { ...ctx.env, ...recordedRuntimeEnv(record) },
      log: quiet,
      print: () => {},
    });
  } finally {
    if (back !== undefined) returnTo(back);
  }
}

function currentDir(): string | undefined {
  try {
    return process.cwd();
  } catch {
    return undefined;
  }
}

function returnTo(dir: string): void {
  try {
    process.chdir(dir);
  } catch {
    // Removed meanwhile: the supervisor is started from the workload's own directory then.
  }
}
