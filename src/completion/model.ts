/**
 * The command tree as shell completion sees it, and the helpers every script generator (bash,
 * zsh, fish, PowerShell) shares. The tree is read from the commands themselves by
 * cli/completion-tree.ts, so completion cannot drift from what the commands parse; the generators
 * here only turn it into shell code.
 */

/**
 * What shell completion offers for an argument: names mcpmgr lists at the time (`mcpmgr __complete
 * KIND`), files, or a fixed set of words.
 */
export type Completes =
  | "workloads"
  /** Those `stop` applies to (starting, running, restarting). */
  | "live-workloads"
  /** Those `start` applies to (stopped, failed, never started). */
  | "stopped-workloads"
  | "groups"
  /** The groups `group rm` applies to: every one but `default`. */
  | "removable-groups"
  /** Stored secret names (names only; offered only where listing them asks for nothing: complete-names.ts). */
  | "secrets"
  /** `NAME,target=` for each stored secret, for `--secret` (no space after it: the variable follows). */
  | "secret-references"
  | "servers"
  | "files"
  /** Directories only (`--env-file-dir`). */
  | "directories"
  /** A built-in permission profile's name (BUILTIN_PROFILES) or a profile file (`--permission-profile`). */
  | "profiles"
  | readonly string[];

/**
 * The built-in permission profiles, offered beside files for `--permission-profile` (the same words as
 * config/permission-profile.ts, which this layer does not import; a test holds them equal).
 */
export const BUILTIN_PROFILES: readonly string[] = ["none", "network"];

/** Names `mcpmgr __complete` lists (the rest are files or fixed words). */
export const LISTED: readonly Completes[] = [
  "workloads",
  "live-workloads",
  "stopped-workloads",
  "groups",
  "removable-groups",
  "secrets",
  "secret-references",
  "servers",
];

/** Kinds whose words are the start of a value, not all of it: the shell adds no space after them. */
export const NO_SPACE: readonly Completes[] = ["secret-references"];

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
  /** The last positional takes any number of words (`stop a b c`): each one past it is completed like it. */
  readonly repeats?: boolean;
  readonly subcommands: readonly CompletionCommand[];
}

/**
 * Whether the words past the last positional of a repeating command leave out the ones already on the line
 * (`stop a b <TAB>` does not offer a or b again): names and fixed words, not files, nor a value's start.
 */
export function dropsGiven(completes: Completes | undefined): boolean {
  if (completes === undefined) return false;
  if (typeof completes !== "string") return true;
  return LISTED.includes(completes) && !NO_SPACE.includes(completes);
}

/** The positionals of a repeating command past its last one, as the scripts ask: the last one's index. */
export function lastPositional(command: CompletionCommand): number | undefined {
  return command.repeats === true && command.positionals.length > 0 ? command.positionals.length - 1 : undefined;
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
