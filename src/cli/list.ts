/**
 * `mcpmgr list`: every workload with its real status (a dead supervisor shows as failed). The
 * AI-client entries of workloads that no longer run are taken out on the way (the lifecycle's
 * client code is loaded only when an AI client was ever registered, the clients module only
 * when there are such entries).
 */
import { defineCommand } from "citty";
import { parseArgv } from "../config/argv.ts";
import { listOptions as table } from "../config/command-options.ts";
import { closeMatches, didYouMean } from "../close-matches.ts";
import { McpmgrError } from "../errors.ts";
import { hasClientRegistrations } from "../state/client-registrations.ts";
import type { McpmgrPaths } from "../state/paths.ts";
import { resolvePaths } from "../state/paths.ts";
import { workloadFolderNames, workloadsRoot } from "../state/workload-folders.ts";
import { assertGroupName, isValidWorkloadName } from "../state/workload-name.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { log, printResult, printTable, reportError } from "./output.ts";
import type { WorkloadRow } from "../workload/list-rows.ts";

const listCommand = defineCommand({
  meta: { name: "list", description: "List workloads and their status" },
  args: toCittyArgs(table),
  async run({ rawArgs }) {
    const { values, positionals } = parseArgv(rawArgs, table, "list", false);
    if (positionals.length > 0) {
      // `mcpmgr list work` listed every workload: the group is an option.
      throw new McpmgrError("INVALID_ARGUMENT", "'mcpmgr list' takes no arguments", {
        // The word is the user's: offered back only when it is a group name, never as shell text.
        hint: `to list one group's workloads: mcpmgr list --group ${isValidWorkloadName(positionals[0] ?? "") ? positionals[0] : "GROUP"}`,
      });
    }
    if (values.group !== undefined) assertGroupName(values.group);
    const paths = resolvePaths();
    const { rows, unreadable, hints, notes } = await rowsOf(paths, values.group);
    // Each record that cannot be read is one error line (its group unknown, so under --group too), after
    // the rest, which are listed anyway; the exit code says that something was not listed.
    const reportUnreadable = () => {
      for (const err of unreadable) process.exitCode = reportError(err);
    };
    if (hasClientRegistrations(paths)) {
      const { pruneClientEntries } = await import("../workload/client-entries.ts");
      await pruneClientEntries({ log, paths, env: process.env });
    }
    // On stderr, so stdout stays data only; in both formats (a script's user reads stderr too).
    const reportNotes = () => {
      for (const note of notes) log.warn(note);
    };
    if (values.format === "json") {
      printResult(JSON.stringify(rows, null, 2));
      reportNotes();
      return reportUnreadable();
    }
    if (rows.length === 0 && unreadable.length > 0) return reportUnreadable();
    // A sentence, not an empty table; on stderr like every message, so stdout stays data only.
    if (rows.length === 0) {
      if (values.group === undefined) {
        return log.info(
          "no workloads yet; start one with 'mcpmgr run fetch' ('mcpmgr registry list' shows the servers)",
        );
      }
      // `run --group` refuses a group that does not exist: the hint must not send the user there.
      const { GroupStore } = await import("../state/groups.ts");
      const groups = (await new GroupStore(paths).list()).map((group) => group.name);
      if (!groups.includes(values.group)) {
        // Like the group commands: a mistyped name is offered the nearest group, not the creation of the typo.
        const near = didYouMean(closeMatches(values.group, groups, { nearestOnly: true }));
        return log.info(
          `no group named ${values.group}; ${near ?? `create it with 'mcpmgr group create ${values.group}'`} ('mcpmgr group list' shows the groups)`,
        );
      }
      return log.info(
        `no workloads in group ${values.group}; start one with 'mcpmgr run fetch --group ${values.group}'`,
      );
    }
    printTable(
      ["NAME", "STATUS", "URL", "SOURCE", "GROUP", "RUNTIME", "RESTARTS"],
      rows.map((r) => [r.name, r.status, r.url, r.source, r.group, r.runtime, String(r.restarts)]),
    );
    // Too long for a column; under the table, on stderr, so stdout stays the table alone. A workload
    // restarting says why too: one whose server crashes at every start shows nothing else but the
    // RESTARTS count growing.
    for (const row of rows) {
      if (row.status === "failed" && row.lastError !== undefined)
        log.warn(
          `${row.name}: ${row.lastError} (hint: ${hints.get(row.name) ?? `see 'mcpmgr logs ${row.name} --proxy'; 'mcpmgr start ${row.name}' runs it again`})`,
        );
      if (row.status === "restarting" && row.lastError !== undefined)
        log.warn(
          `${row.name} is restarting: ${row.lastError} (hint: its last output is in 'mcpmgr logs ${row.name} --proxy'; 'mcpmgr stop ${row.name}' stops it)`,
        );
    }
    reportNotes();
    reportUnreadable();
  },
});

/**
 * The rows of the workload store. A new or emptied MCPMGR_HOME has no workload folder: there is nothing to
 * read, and the store, its record schemas and the supervisor code are not loaded (bench `cli-startup`).
 * Only a folder that is not there, or holds no workload, counts as none: anything else in the way (a file
 * in its place, a folder this user cannot read) goes to the store, which reports it as before.
 */
async function rowsOf(
  paths: McpmgrPaths,
  group: string | undefined,
): Promise<{ rows: WorkloadRow[]; unreadable: unknown[]; hints: Map<string, string>; notes: string[] }> {
  if (_noWorkloadFolders(paths)) return { rows: [], unreadable: [], hints: new Map(), notes: [] };
  const [{ WorkloadStore }, { workloadRows }] = await Promise.all([
    import("../state/workloads.ts"),
    import("../workload/list-rows.ts"),
  ]);
  return workloadRows(new WorkloadStore(paths), group);
}

function _noWorkloadFolders(paths: McpmgrPaths): boolean {
  try {
    return workloadFolderNames(workloadsRoot(paths)).length === 0;
  } catch {
    return false;
  }
}

export default withExamples(listCommand, [
  { description: "Every workload, its status and the URL MCP clients use", command: "mcpmgr list" },
  { description: "Only the workloads of the group 'work'", command: "mcpmgr list --group work" },
  { description: "The same as JSON, for scripts", command: "mcpmgr list --format json" },
]);
