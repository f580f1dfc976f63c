/**
 * What a name that is not a workload record is: a live foreground run (which holds the name
 * without a record), or a mistyped name. The store's errors for both, in one place.
 */
import { closeMatches, didYouMean } from "../close-matches.ts";
import { McpmgrError } from "../errors.ts";
import { liveForegroundRun } from "./foreground-runs.ts";
import type { McpmgrPaths } from "./paths.ts";

/** WORKLOAD_EXISTS while a live foreground run holds the name. */
export function assertNoForegroundRun(paths: McpmgrPaths, name: string): void {
  const running = liveForegroundRun(paths, name);
  if (running === undefined) return;
  throw new McpmgrError("WORKLOAD_EXISTS", `a foreground run named ${name} is running (pid ${running.pid})`, {
    hint: "stop it (Ctrl-C where it runs), or choose another --name",
  });
}

/** WORKLOAD_NOT_FOUND for `name`: a foreground run of that name said as such, else the nearest name. */
export function workloadNotFound(paths: McpmgrPaths, name: string, names: readonly string[]): never {
  // A foreground run has no record (nothing to stop, start or read logs of here), but it is not nowhere.
  const foreground = liveForegroundRun(paths, name);
  if (foreground !== undefined) {
    throw new McpmgrError(
      "WORKLOAD_NOT_FOUND",
      `${name} is a foreground run (pid ${foreground.pid}), not a recorded workload`,
      { hint: "it logs to its terminal; stop it there with Ctrl-C" },
    );
  }
  // A mistyped name: the nearest workload's, as a mistyped command or registry name gets.
  const near = didYouMean(closeMatches(name, names, { nearestOnly: true }));
  throw new McpmgrError("WORKLOAD_NOT_FOUND", `no workload named ${name}`, {
    hint: near ? `${near} ('mcpmgr list' shows the workloads)` : "see the workloads with: mcpmgr list",
  });
}
