/**
 * `run --from-config PATH`: an exported record holds the run options as they were validated;
 * they are parsed again by the caller, so an edited file gets the same checks as a command line.
 * Relative paths in it are taken from its working directory.
 */
import { McpmgrError } from "../errors.ts";
import { readJsonFile } from "../state/atomic-file.ts";
import { type WorkloadRecord, workloadRecordSchema } from "../state/workload-record.ts";

/** The exported record at `path`, checked; the process moves to its working directory. */
export async function readExported(path: string): Promise<WorkloadRecord> {
  const record = await readJsonFile(path, workloadRecordSchema, { hint: "export one with 'mcpmgr export NAME PATH'" });
  if (record === undefined)
    throw new McpmgrError("INVALID_OPTION", `--from-config ${JSON.stringify(path)}: no such file`, {
      hint: "give the path of an exported configuration",
    });
  if (record.runOptions.length === 0) {
    throw new McpmgrError("INVALID_OPTION", `--from-config ${path}: the file has no run options`, {
      hint: "export it again with 'mcpmgr export NAME PATH'",
    });
  }
  if (record.workingDir) process.chdir(record.workingDir);
  return record;
}

/** The argv `run` parses for an exported workload. */
export function argsFromConfig(record: WorkloadRecord, foreground: boolean): string[] {
  return foreground ? ["--foreground", ...record.runOptions] : [...record.runOptions];
}

/**
 * An exported background gateway: its stored options are the `mcpmgr gateway ... --detach` that
 * made it, turned back into its spec (refused in the foreground, or when they are not a detached
 * gateway's).
 */
export async function exportedGatewaySpec(record: WorkloadRecord, foreground: boolean) {
  if (foreground) {
    throw new McpmgrError("CONFLICTING_OPTIONS", `--from-config holds the background gateway ${record.name}`, {
      hint: `leave --foreground out, or run a gateway in the foreground with 'mcpmgr gateway ${record.group}'`,
    });
  }
  const { buildGatewaySpec } = await import("../config/gateway-spec.ts");
  const spec = buildGatewaySpec(record.runOptions);
  if (!spec.detach) {
    throw new McpmgrError(
      "INVALID_OPTION",
      `--from-config: ${record.name}'s run options are not a background gateway's`,
      {
        hint: "export it again with 'mcpmgr export NAME PATH'",
      },
    );
  }
  return spec;
}
