/**
 * The store's workload folders (stateDir/workloads/<name>), read without the store: `list` asks whether
 * there are any before it loads the store, its record schemas and the supervisor code, which a new or
 * emptied MCPMGR_HOME does not need (start-up, bench `cli-startup`). The store reads them here too.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { McpmgrPaths } from "./paths.ts";
import { isValidWorkloadName } from "./workload-name.ts";

/** The folder that holds one folder per workload. */
export function workloadsRoot(paths: McpmgrPaths): string {
  return join(paths.stateDir, "workloads");
}

/**
 * The names of the workload folders under `root` (a folder may still lack its record); none when `root`
 * is not there. Anything else the file system reports is thrown as it came.
 */
export function workloadFolderNames(root: string): string[] {
  try {
    return readdirSync(root, { withFileTypes: true })
      .filter((e) => e.isDirectory() && isValidWorkloadName(e.name))
      .map((e) => e.name);
  } catch (err) {
    if ((err as { code?: unknown } | undefined)?.code === "ENOENT") return [];
    throw err;
  }
}
