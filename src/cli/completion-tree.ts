/**
 * The command tree for shell completion (src/completion/model.ts), read from the commands
 * themselves: their subcommands (and help-only ones, `proxy stdio`), the citty arguments
 * toCittyArgs made from their option tables, and what each positional names.
 */
import type { ArgsDef, CommandDef } from "citty";
import type { Completes, CompletionCommand, CompletionOption } from "../completion/model.ts";
import type { OptionTable } from "../config/option-spec.ts";
import { choicesOf } from "../config/values.ts";
import { argsSourceOf, helpSubCommandsOf } from "./citty-args.ts";

// biome-ignore lint/suspicious/noExplicitAny: citty's CommandDef is invariant in its args
type AnyCommand = CommandDef<any>;

async function resolve<T>(value: T | (() => T | Promise<T>) | Promise<T>): Promise<T> {
  return typeof value === "function" ? await (value as () => T | Promise<T>)() : await value;
}

/** The visible command tree under `root` (every subcommand module is loaded). */
export async function completionTree(root: AnyCommand, path: readonly string[] = []): Promise<CompletionCommand> {
  const meta = await resolve(root.meta);
  const args: ArgsDef = (await resolve(root.args)) ?? {};
  const source = argsSourceOf(args);
  const subs: [string, AnyCommand][] = [];
  for (const [name, sub] of [
    ...Object.entries((await resolve(root.subCommands)) ?? {}),
    ...Object.entries(helpSubCommandsOf(root) ?? {}),
  ]) {
    const command = (await resolve(sub)) as AnyCommand;
    if (!(await resolve(command.meta))?.hidden) subs.push([name, command]);
  }
  return {
    path,
    description: meta?.description ?? "",
    options: optionsOf(args, source?.table ?? {}),
    positionals: Object.entries(args)
      .filter(([, arg]) => arg.type === "positional")
      .map(([name]) => source?.positionals[name]?.completes),
    ...(Object.values(source?.positionals ?? {}).at(-1)?.variadic ? { repeats: true } : {}),
    subcommands: await Promise.all(subs.map(([name, command]) => completionTree(command, [...path, name]))),
  };
}

function optionsOf(args: ArgsDef, table: OptionTable): CompletionOption[] {
  const options: CompletionOption[] = [];
  for (const [name, arg] of Object.entries(args)) {
    if (arg.type === "positional") continue;
    const alias = [(arg as { alias?: string | string[] }).alias ?? []].flat()[0];
    const short = alias === undefined ? {} : { short: `-${alias}` };
    const description = arg.description ?? "";
    const spec = table[name];
    if (arg.type === "boolean") {
      options.push({ long: `--${name}`, ...short, description });
      // As citty's help shows them: the negation of a flag that is on by default.
      if (spec?.kind === "boolean" && spec.default)
        options.push({ long: `--no-${name}`, description: `Turn off --${name}` });
      continue;
    }
    options.push({ long: `--${name}`, ...short, description, value: valueCompletion(spec) });
  }
  return options;
}

/** What an option's value is, from its table entry: its choices, a file, a group, or anything. */
function valueCompletion(spec: OptionTable[string] | undefined): Completes | "any" {
  if (spec?.kind !== "string") return "any";
  const choices = choicesOf(spec.schema);
  if (choices.length > 0) return choices;
  if (spec.valueHint === "path") return "files";
  if (spec.valueHint === "dir") return "directories";
  // A built-in profile's name or a profile file.
  if (spec.valueHint === "none|network|path") return "profiles";
  // -v's host path comes first: the shell's own file completion (after the colon too, a path).
  if (spec.valueHint === "src:dst[:ro]") return "files";
  if (spec.valueHint === "group") return "groups";
  if (spec.valueHint === "NAME,target=ENV") return "secret-references";
  return "any";
}
