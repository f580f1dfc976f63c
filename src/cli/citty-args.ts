/** Option tables (config/) → citty argument definitions, used for dispatch and help. */
import type { ArgsDef } from "citty";
import type { OptionTable } from "../config/option-spec.ts";

export interface PositionalHelp {
  readonly description: string;
  readonly required: boolean;
}

export function toCittyArgs(
  table: OptionTable,
  positionals: Readonly<Record<string, PositionalHelp>> = {},
  /** Declared options whose behaviour has not landed: help says so. */
  notYet: ReadonlySet<string> = new Set(),
): ArgsDef {
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
    if (notYet.has(name)) description += " [not supported yet]";
    if (spec.kind === "boolean") {
      args[name] = { type: "boolean", description, default: spec.default, ...(spec.short ? { alias: spec.short } : {}) };
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
