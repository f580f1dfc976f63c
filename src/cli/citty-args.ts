/** Option tables (config/) → citty argument definitions, used for dispatch and help. */
import type { ArgsDef, CommandDef } from "citty";
import type { OptionTable } from "../config/option-spec.ts";

export interface PositionalHelp {
  readonly description: string;
  readonly required: boolean;
}

export function toCittyArgs(table: OptionTable, positionals: Readonly<Record<string, PositionalHelp>> = {}): ArgsDef {
  const args: ArgsDef = {};
  for (const [name, help] of Object.entries(positionals)) {
    args[name] = { type: "positional", description: help.description, required: help.required };
  }
  // Handled by run-main.ts before parsing; listed so help tells the whole truth.
  args.help = { type: "boolean", alias: "h", description: "Show this help" };
  for (const [name, spec] of Object.entries(table)) {
    if (spec.hidden) continue;
    let description = spec.description;
    if (spec.defaultText !== undefined) description += ` (Default: ${spec.defaultText})`;
    if (spec.kind === "boolean") {
      args[name] = {
        type: "boolean",
        description,
        default: spec.default,
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
