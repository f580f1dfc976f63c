/**
 * A recorded workload's options resolved as its start needs them: the working directory it was
 * created in entered, then its run options as a RunSpec (or a background gateway's spec), every
 * file they name read from there. The supervisor starts from this, and `restart` resolves the same
 * before it stops anything (restart-check.ts): one resolution, so the check refuses what the start
 * would refuse and nothing else (a gateway's relative `--audit-config` included).
 */
import type { GatewaySpec } from "../config/gateway-spec.ts";
import { parseRunArgv } from "../config/run-argv.ts";
import { errorMessage, McpmgrError } from "../errors.ts";
import { errnoCode } from "../state/atomic-file.ts";
import { isGatewayRecord, type WorkloadRecord } from "../state/workload-record.ts";
import type { WorkloadContext } from "./context.ts";
import { prepareRunSpec, type RunSpec } from "./run-spec.ts";

export type RecordedSpec =
  | { readonly kind: "gateway"; readonly spec: GatewaySpec }
  | { readonly kind: "run"; readonly spec: RunSpec };

/**
 * The record's options resolved in the current directory: call `enterWorkingDir` first, as the
 * supervisor does, so relative paths mean what they meant where the workload was created.
 */
export async function resolveRecorded(record: WorkloadRecord, ctx: WorkloadContext): Promise<RecordedSpec> {
  if (isGatewayRecord(record)) {
    const { buildGatewaySpec } = await import("../config/gateway-spec.ts");
    return { kind: "gateway", spec: buildGatewaySpec(record.runOptions) };
  }
  return { kind: "run", spec: await prepareRunSpec(parseRunArgv(record.runOptions), ctx, { recorded: true }) };
}

/**
 * The recorded working directory is a real path (process.cwd() at `run`). If chdir to it
 * lands elsewhere, a symbolic link was put on its way since, maybe by a server that can
 * write there (review H2): refuse rather than show the server whatever the link names. A
 * directory removed since (a project moved or deleted) is a failed start saying so.
 */
export function enterWorkingDir(recorded: string): void {
  try {
    process.chdir(recorded);
  } catch (err) {
    throw new McpmgrError(
      "STATE_IO",
      `its working directory ${recorded} is gone (${errnoCode(err) ?? errorMessage(err)}); relative paths in its options are taken from there`,
      { hint: "create the directory again, or remove the workload and run it again from another folder" },
    );
  }
  const now = process.cwd();
  if (now === recorded) return;
  throw new McpmgrError(
    "UNSAFE_MOUNT",
    `the working directory ${recorded} now leads to ${now}: a symbolic link was put on its way since the workload was created`,
    { hint: "remove the link, or create the workload again from the directory you mean (mcpmgr rm, then mcpmgr run)" },
  );
}
