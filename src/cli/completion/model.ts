/**
 * The command tree as shell completion sees it, read from the commands themselves: their
 * subcommands (and help-only ones, `proxy stdio`), the citty arguments toCittyArgs made from
 * their option tables, and what each positional names. Every script generator (bash, zsh, fish,
 * PowerShell) works from this one model, so completion cannot drift from what the commands parse.
 */
import type { ArgsDef, CommandDef } from "citty";
import type { OptionTable } from "../../config/option-spec.ts";
import { choicesOf } from "../../config/values.ts";
import { argsSourceOf, type Completes, helpSubCommandsOf } from "../citty-args.ts";

export interface CompletionOption {
  /** `--name`. */
  readonly long: string;
  /** `-n`, when it has one. */
  readonly short?: string;
  readonly description: string;
  /** What its value can be: undefined for a flag, "any" for a value nothing can be offered for. */
  readonly value?: Completes | "any";
}

export interface CompletionCommand {
  /** The words after `mcpmgr` that name it: [] for the root, ["group", "rm"]. */
  readonly path: readonly string[];
  readonly description: string;
  readonly options: readonly CompletionOption[];
  /** What each positional argument names, in order (undefined: nothing to offer). */
  readonly positionals: readonly (Completes | undefined)[];
  readonly subcommands: readonly CompletionCommand[];
}

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
  if (spec.valueHint === "group") return "groups";
  return "any";
}

/** Every command of the tree, the root first. */
export function allCommands(root: CompletionCommand): CompletionCommand[] {
  return [root, ...root.subcommands.flatMap(allCommands)];
}

/** The words of a path as one key ("" for the root, "group rm"), as the scripts compare them. */
export function keyOf(command: CompletionCommand): string {
  return command.path.join(" ");
}

/** The options of a command that take a separate value (long and short forms). */
export function valueOptionWords(command: CompletionCommand): string[] {
  return command.options
    .filter((option) => option.value !== undefined)
    .flatMap((option) => (option.short === undefined ? [option.long] : [option.long, option.short]));
}

/** Every word a command offers as an option. */
export function optionWords(command: CompletionCommand): string[] {
  return command.options.flatMap((option) =>
    option.short === undefined ? [option.long] : [option.long, option.short],
  );
}

/**
 * Words the scripts put in their code unquoted (command and option names, choices, client ids):
 * anything else is a mistake in a table, refused here rather than written into a user's shell.
 */
export function plainWord(word: string): string {
  if (!/^[A-Za-z0-9_][\w.:/@+-]*$|^--?[A-Za-z0-9][\w-]*$/.test(word))
    throw new Error(`${JSON.stringify(word)} cannot be written into a completion script`);
  return word;
}
