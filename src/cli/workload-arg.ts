/** The NAME argument of the lifecycle, group and client commands, parsed strictly; the workload store. */
import { parseArgv } from "../config/argv.ts";
import type { OptionTable } from "../config/option-spec.ts";
import { McpmgrError } from "../errors.ts";
import { resolvePaths } from "../state/paths.ts";
import { WorkloadStore } from "../state/workloads.ts";

export interface NamedArgument {
  /** What the argument is, for errors: "workload NAME" (the default), "group NAME", "CLIENT". */
  readonly what?: string;
  /** How many more arguments the command takes (export's PATH). */
  readonly extra?: number;
  /** Words after `--` are arguments too (a name may start with '-'). */
  readonly afterDashes?: boolean;
}

/** The one NAME argument of a command (and `extra` more), parsed strictly with its options. */
export function parseNamed<Table extends OptionTable>(
  rawArgs: readonly string[],
  table: Table,
  command: string,
  options: NamedArgument = {},
) {
  const parsed = parseArgv(rawArgs, table, command, false);
  const [name, ...rest] = options.afterDashes ? [...parsed.positionals, ...parsed.passthrough] : parsed.positionals;
  const what = options.what ?? "workload NAME";
  if (name === undefined)
    throw new McpmgrError("MISSING_OPTION", `missing the ${what}`, {
      hint: `usage: mcpmgr ${command} ${what.split(" ").at(-1)}${options.what ? "" : " (see 'mcpmgr list')"}`,
    });
  if (rest.length > (options.extra ?? 0))
    throw new McpmgrError("INVALID_ARGUMENT", `unexpected argument ${JSON.stringify(rest[options.extra ?? 0])}`, {
      hint: `see 'mcpmgr ${command} --help'`,
    });
  return { ...parsed, name, rest };
}

export function openStore(): WorkloadStore {
  return new WorkloadStore(resolvePaths());
}

/** The URL MCP clients use for a workload (kept in state/ so AI-client configuration computes the same one). */
export { workloadUrl } from "../state/workload-url.ts";
