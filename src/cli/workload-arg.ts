/** The NAME argument of the lifecycle commands, parsed strictly. */
import { parseArgv } from "../config/argv.ts";
import type { OptionTable } from "../config/option-spec.ts";
import { McpmgrError } from "../errors.ts";
import { resolvePaths } from "../state/paths.ts";
import { WorkloadStore } from "../state/workloads.ts";

export function parseNamed<Table extends OptionTable>(
  rawArgs: readonly string[],
  table: Table,
  command: string,
  extra = 0,
) {
  const parsed = parseArgv(rawArgs, table, command, false);
  const [name, ...rest] = parsed.positionals;
  if (name === undefined)
    throw new McpmgrError("MISSING_OPTION", "missing the workload NAME", {
      hint: `usage: mcpmgr ${command} NAME (see 'mcpmgr list')`,
    });
  if (rest.length > extra)
    throw new McpmgrError("INVALID_ARGUMENT", `unexpected argument ${JSON.stringify(rest[extra])}`, {
      hint: `see 'mcpmgr ${command} --help'`,
    });
  return { ...parsed, name, rest };
}

export function openStore(): WorkloadStore {
  return new WorkloadStore(resolvePaths());
}

/** The URL MCP clients use for a workload (kept in state/ so AI-client configuration computes the same one). */
export { workloadUrl } from "../state/workload-url.ts";
