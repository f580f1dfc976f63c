/**
 * What `restart` checks before it stops a running workload: that the new supervisor could start
 * it. The run options are resolved as the supervisor resolves them (from the recorded working
 * directory: files named by relative paths, a token file, a webhook file, an env file), and every
 * secret the record names is looked up. A restart that could not start the workload again is
 * refused in one line while the workload goes on running, instead of leaving it down and failed.
 * Nothing is started here and nothing is printed: the supervisor says what it says as it starts.
 */
import type { WorkloadRecord } from "../state/workload-record.ts";
import { isGatewayRecord } from "../state/workload-record.ts";
import type { WorkloadContext, WorkloadLog } from "./context.ts";
import { assertSecretsResolve } from "./secret-references.ts";
import { recordedRuntimeEnv } from "./supervisor-control.ts";

const quiet: WorkloadLog = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };

export async function assertRestartable(record: WorkloadRecord, ctx: WorkloadContext): Promise<void> {
  if (isGatewayRecord(record)) {
    const { buildGatewaySpec } = await import("../config/gateway-spec.ts");
    buildGatewaySpec(record.runOptions);
  } else {
    const { parseRunArgv } = await import("../config/run-argv.ts");
    const { prepareRunSpec } = await import("./run-spec.ts");
    const back = process.cwd();
    // A working directory that is gone (or now a link elsewhere) is the supervisor's to report.
    if (record.workingDir !== undefined && !enter(record.workingDir))
      return assertSecretsResolve(record, () => ctx.secrets());
    try {
      await prepareRunSpec(
        parseRunArgv(record.runOptions),
        { ...ctx, env: { ...ctx.env, ...recordedRuntimeEnv(record) }, log: quiet, print: () => {} },
        { recorded: true },
      );
    } finally {
      process.chdir(back);
    }
  }
  await assertSecretsResolve(record, () => ctx.secrets());
}

function enter(dir: string): boolean {
  try {
    process.chdir(dir);
  } catch {
    return false;
  }
  return true;
}
