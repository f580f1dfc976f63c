/**
 * `start` of a stopped workload: its option files (--authz-config, --audit-config, --webhook-config,
 * --tools-override, --permission-profile) checked for a key given twice before its supervisor starts.
 * The supervisor reads them again but does not look for such keys (config/config-file.ts: that check
 * loads the `yaml` library, 1 to 2 MiB the supervisor would hold all its life), so the command that
 * starts it does, as `run` and `restart` do by resolving the whole workload. A file edited since the
 * workload stopped is refused here in one line, the workload left stopped.
 */
import { parseArgv } from "../config/argv.ts";
import { assertNoDuplicateKeys } from "../config/config-file.ts";
import { gatewayOptions } from "../config/gateway-options.ts";
import { parseRunArgv } from "../config/run-argv.ts";
import { isGatewayRecord, type WorkloadRecord } from "../state/workload-record.ts";
import { enterWorkingDir } from "./recorded-spec.ts";

export function assertOptionFileKeysUnique(record: WorkloadRecord): void {
  const files: [option: string, path: string | undefined, yaml: boolean][] = [];
  if (isGatewayRecord(record)) {
    const { values } = parseArgv(record.runOptions, gatewayOptions, "gateway", false);
    files.push(["--authz-config", values["authz-config"], true], ["--audit-config", values["audit-config"], true]);
    files.push(["--tools-override", values["tools-override"], false]);
  } else {
    const { values } = parseRunArgv(record.runOptions);
    files.push(["--authz-config", values["authz-config"], true], ["--audit-config", values["audit-config"], true]);
    files.push(["--tools-override", values["tools-override"], false]);
    for (const hooks of values["webhook-config"]) files.push(["--webhook-config", hooks, true]);
    const profile = values["permission-profile"];
    if (profile !== "none" && profile !== "network") files.push(["--permission-profile", profile, false]);
  }
  const named = files.filter((file): file is [string, string, boolean] => file[1] !== undefined);
  if (named.length === 0) return;
  const back = currentDir();
  try {
    if (record.workingDir) {
      try {
        enterWorkingDir(record.workingDir);
      } catch {
        // Its working directory is gone: the supervisor's start says so and records the workload failed.
        return;
      }
    }
    for (const [option, path, yaml] of named) assertNoDuplicateKeys(path, { option, yaml });
  } finally {
    if (back !== undefined) returnTo(back);
  }
}

function currentDir(): string | undefined {
  try {
    return process.cwd();
  } catch {
    return undefined; // removed since: the supervisor enters the workload's own directory anyway
  }
}

function returnTo(dir: string): void {
  try {
    process.chdir(dir);
  } catch {
    // Removed meanwhile: nothing after this check reads a relative path.
  }
}
