/**
 * `mcpmgr list`: every workload with its real status (a dead supervisor shows as failed). The
 * AI-client entries of workloads that no longer run are taken out on the way (the lifecycle's
 * client code is loaded only when an AI client was ever registered, the clients module only
 * when there are such entries).
 */
import { defineCommand } from "citty";
import { parseArgv } from "../config/argv.ts";
import { listOptions as table } from "../config/command-options.ts";
import { hasClientRegistrations } from "../state/client-registrations.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { log, printResult } from "./output.ts";
import { currentStatus } from "../workload/supervisor-control.ts";
import { openStore, workloadUrl } from "./workload-arg.ts";

const listCommand = defineCommand({
  meta: { name: "list", description: "List workloads and their status" },
  args: toCittyArgs(table),
  async run({ rawArgs }) {
    const { values } = parseArgv(rawArgs, table, "list", false);
    const store = openStore();
    const rows = [];
    for (const record of await store.list()) {
      if (values.group !== undefined && record.group !== values.group) continue;
      const status = await currentStatus(store, record.name);
      rows.push({
        name: record.name,
        status: status?.state ?? "stopped",
        url: workloadUrl(record),
        source: record.source.ref,
        group: record.group,
        runtime: record.runtime,
        restarts: status?.restarts ?? 0,
        ...(status?.lastError ? { lastError: status.lastError } : {}),
      });
    }
    if (hasClientRegistrations(store.paths)) {
      const { pruneClientEntries } = await import("../workload/client-entries.ts");
      await pruneClientEntries({ log, paths: store.paths, env: process.env });
    }
    if (values.format === "json") return printResult(JSON.stringify(rows, null, 2));
    // A sentence, not an empty table; on stderr like every message, so stdout stays data only.
    if (rows.length === 0) {
      return log.info(
        values.group === undefined
          ? "no workloads yet; start one with 'mcpmgr run fetch' ('mcpmgr registry list' shows the servers)"
          : `no workloads in group ${values.group}; start one with 'mcpmgr run fetch --group ${values.group}'`,
      );
    }
    const header = ["NAME", "STATUS", "URL", "SOURCE", "GROUP", "RUNTIME", "RESTARTS"];
    const lines = [
      header,
      ...rows.map((r) => [r.name, r.status, r.url, r.source, r.group, r.runtime, String(r.restarts)]),
    ];
    const widths = header.map((_, i) => Math.max(...lines.map((line) => (line[i] as string).length)));
    for (const line of lines)
      printResult(
        line
          .map((cell, i) => cell.padEnd(widths[i] as number))
          .join("  ")
          .trimEnd(),
      );
  },
});

export default withExamples(listCommand, [
  { description: "Every workload, its status and the URL MCP clients use", command: "mcpmgr list" },
  { description: "Only the workloads of the group 'work'", command: "mcpmgr list --group work" },
  { description: "The same as JSON, for scripts", command: "mcpmgr list --format json" },
]);
