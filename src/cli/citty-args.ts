/**
 * Option tables (config/) → citty argument definitions, used for dispatch, help and shell completion;
 * what citty has no place for: help-only subcommands, summaries, examples.
 */
import type { ArgsDef, CommandDef, CommandMeta, SubCommandsDef } from "citty";
import type { Completes } from "../completion/model.ts";
import type { OptionTable } from "../config/option-spec.ts";
import { McpmgrError } from "../errors.ts";

export interface PositionalHelp {
  readonly description: string;
  readonly required: boolean;
  readonly completes?: Completes;
  /** The last positional only: it takes every remaining word (`registry search github issues`). */
  readonly variadic?: boolean;
  /** The error when a required one is missing, instead of citty's generic one (run-main.ts). */
  readonly whenMissing?: { readonly message: string; readonly hint: string };
}

/** What toCittyArgs made an argument definition from: the option table and the positionals, for completion. */
export interface ArgsSource {
  readonly table: OptionTable;
  readonly positionals: Readonly<Record<string, PositionalHelp>>;
}

const sources = new WeakMap<ArgsDef, ArgsSource>();

/** The option table and positionals behind a command's citty arguments, when toCittyArgs made them. */
export function argsSourceOf(args: ArgsDef): ArgsSource | undefined {
  return sources.get(args);
}

/**
 * The error for a required positional left out. citty's own ("Missing required positional argument:
 * NAME") names neither the command nor what goes there; this one says what the argument is and
 * gives the usage line, or is the command's own words (whenMissing) when it has them.
 */
export function missingPositional(command: string, args: ArgsDef, name: string): McpmgrError {
  const positionals = argsSourceOf(args)?.positionals ?? {};
  const help = positionals[name];
  if (help?.whenMissing) {
    return new McpmgrError("MISSING_OPTION", help.whenMissing.message, { hint: help.whenMissing.hint });
  }
  const usage = Object.entries(positionals).map(([each, positional]) => {
    const word = positional.variadic ? `${each}...` : each;
    return positional.required ? word : `[${word}]`;
  });
  const what = help === undefined ? "" : `: ${lowerFirst(help.description)}`;
  return new McpmgrError("MISSING_OPTION", `missing ${name}${what}`, {
    hint: `usage: ${[command, ...usage].join(" ")}; '${command} --help' shows its options`,
  });
}

/** "Workload name" → "workload name" inside a sentence; "AI client" stays as it is. */
function lowerFirst(text: string): string {
  return /^[A-Z][a-z]/.test(text) ? text[0]?.toLowerCase() + text.slice(1) : text;
}

const helpArg = { type: "boolean", alias: "h", description: "Show this help" } as const;

export function toCittyArgs(table: OptionTable, positionals: Readonly<Record<string, PositionalHelp>> = {}): ArgsDef {
  const args: ArgsDef = {};
  sources.set(args, { table, positionals });
  for (const [name, help] of Object.entries(positionals)) {
    args[name] = { type: "positional", description: help.description, required: help.required };
  }
  // Handled by run-main.ts before parsing; listed so help tells the whole truth.
  args.help = helpArg;
  for (const [name, spec] of Object.entries(table)) {
    if (spec.hidden) continue;
    let description = spec.description;
    if (spec.defaultText !== undefined) description += ` (Default: ${spec.defaultText})`;
    if (spec.kind === "boolean") {
      args[name] = {
        type: "boolean",
        description,
        default: spec.default,
        // citty lists `--no-NAME` for a flag that is on by default; without this its row is empty.
        ...(spec.default ? { negativeDescription: `Turn off --${name}` } : {}),
        ...(spec.short ? { alias: spec.short } : {}),
      };
      continue;
    }
    args[name] = {
      type: "string",
      description,
      ...(spec.default !== undefined ? { default: spec.default } : {}),
      ...(spec.short ? { alias: spec.short } : {}),
      ...(spec.valueHint ? { valueHint: spec.valueHint } : {}),
    };
  }
  return args;
}

const routers = new WeakSet<object>();

/**
 * A command that only dispatches to its subcommands. A command line that names none is refused
 * with `noSubcommand`, by default "no NAME command given" and a hint listing the subcommands. citty calls a command's `run` after its subcommand too: the one made here returns
 * at once then, so run-main.ts can go straight past such a command to the subcommand named,
 * without citty parsing the argv again at this level (a sixth of `mcpmgr registry list`).
 */
export function routingCommand<A extends ArgsDef>(
  command: Omit<CommandDef<A>, "run" | "subCommands"> & { readonly subCommands: SubCommandsDef },
  noSubcommand: () => Error = () => missingSubcommand(command),
): CommandDef<A> {
  const { subCommands } = command;
  // `-h` works on every router: listed, so its usage line reads `[OPTIONS]` as every other command's does.
  if (command.args === undefined) (command as { args?: ArgsDef }).args = { help: helpArg };
  const router: CommandDef<A> = Object.assign(command, {
    run({ rawArgs }: { rawArgs: readonly string[] }): void {
      // A word after `--` names no subcommand (citty does not dispatch to it): `registry -- list` ran nothing.
      const end = rawArgs.indexOf("--");
      const first = (end === -1 ? rawArgs : rawArgs.slice(0, end)).find((arg) => !arg.startsWith("-"));
      if (first !== undefined && Object.hasOwn(subCommands, first)) return;
      throw noSubcommand();
    },
  });
  routers.add(router);
  return router;
}

function missingSubcommand(command: { readonly meta?: unknown; readonly subCommands: SubCommandsDef }): Error {
  const name = (command.meta as CommandMeta | undefined)?.name ?? "";
  return new McpmgrError("INVALID_ARGUMENT", `no ${name} command given`, {
    hint: `use 'mcpmgr ${name} ${Object.keys(command.subCommands).join("|")}', see 'mcpmgr ${name} --help'`,
  });
}

/** Whether the command was made by routingCommand: its `run` has work only when no subcommand is named. */
export function isRoutingCommand(command: object): boolean {
  return routers.has(command);
}

/** Subcommands a command dispatches by itself, listed (and navigable) for help only. */
// biome-ignore lint/suspicious/noExplicitAny: citty's CommandDef is invariant in its args
export type HelpSubCommands = Readonly<Record<string, CommandDef<any>>>;

// biome-ignore lint/suspicious/noExplicitAny: as above
export function withHelpSubCommands<C extends CommandDef<any>>(
  command: C,
  helpSubCommands: HelpSubCommands,
): C & { readonly helpSubCommands: HelpSubCommands } {
  return Object.assign(command, { helpSubCommands });
}

/** The help-only subcommands of a command, if it has any. */
export function helpSubCommandsOf(command: object): HelpSubCommands | undefined {
  return (command as { helpSubCommands?: HelpSubCommands }).helpSubCommands;
}

/**
 * What a command's help lists for its subcommands when loading them all just to print their
 * descriptions would cost more than the help itself (the root command's lazily loaded ones).
 */
// biome-ignore lint/suspicious/noExplicitAny: as above
export function withSubCommandSummaries<C extends CommandDef<any>>(
  command: C,
  summaries: HelpSubCommands,
): C & { readonly subCommandSummaries: HelpSubCommands } {
  return Object.assign(command, { subCommandSummaries: summaries });
}

/** The subcommand summaries help shows for a command, if it has them. */
export function subCommandSummariesOf(command: object): HelpSubCommands | undefined {
  return (command as { subCommandSummaries?: HelpSubCommands }).subCommandSummaries;
}

/** A command line shown in a command's help, under EXAMPLES (test/unit/cli-examples.test.ts parses each one). */
export interface Example {
  /** What it does, shown as a comment above it. */
  readonly description: string;
  /** The whole command line, starting with `mcpmgr`. */
  readonly command: string;
}

/** A command with the examples its help shows (citty's own help has no such section). */
// biome-ignore lint/suspicious/noExplicitAny: as above
export function withExamples<C extends CommandDef<any>>(
  command: C,
  examples: readonly Example[],
): C & { readonly examples: readonly Example[] } {
  return Object.assign(command, { examples });
}

/** The examples of a command, if it has any. */
export function examplesOf(command: object): readonly Example[] | undefined {
  return (command as { examples?: readonly Example[] }).examples;
}
