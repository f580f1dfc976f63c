/**
 * Our own runMain around citty's runCommand: citty's would treat a `--help` meant for
 * the MCP server (after `--`) as ours, print stack traces, and exit 1 on usage errors.
 * Here: global flags are read only before `--`, usage errors exit 2 with one line. Before a
 * command runs, AI-client entries of workloads whose supervisor died are taken out
 * (stale-client-entries.ts).
 */
import { type ArgsDef, type CommandContext, type CommandDef, parseArgs, renderUsage, runCommand } from "citty";
import { closeMatches, didYouMean } from "../close-matches.ts";
import { keepLoopbackOffEnvironmentProxy } from "../config/loopback.ts";
import { errorMessage, McpmgrError } from "../errors.ts";
import { version } from "../version.ts";
import {
  examplesOf,
  helpSubCommandsOf,
  isRoutingCommand,
  missingPositional,
  subCommandSummariesOf,
} from "./citty-args.ts";
import { enableDebug, printResult, reportError } from "./output.ts";

const globalFlags: ReadonlySet<string> = new Set(["--debug"]);

// biome-ignore lint/suspicious/noExplicitAny: citty's CommandDef is invariant in its args
export async function runMain(root: CommandDef<any>, argv: readonly string[] = process.argv.slice(2)): Promise<never> {
  const end = argv.indexOf("--") === -1 ? argv.length : argv.indexOf("--");
  const own = argv.slice(0, end);
  if (own.includes("--debug")) enableDebug();
  const rawArgs = [...own.filter((arg) => !globalFlags.has(arg)), ...argv.slice(end)];
  // mcpmgr's own endpoints are on loopback: fetch must not send them to a proxy from the environment.
  keepLoopbackOffEnvironmentProxy(process.env);

  try {
    if (rawArgs.length === 0 || own.includes("--help") || own.includes("-h")) {
      const [cmd, parent] = await resolveCommand(
        root,
        rawArgs.slice(0, rawArgs.indexOf("--") === -1 ? undefined : rawArgs.indexOf("--")),
      );
      const summaries = subCommandSummariesOf(cmd);
      const shown = summaries === undefined ? cmd : { ...cmd, subCommands: summaries };
      const sections = [await renderUsage(shown, parent), await helpOnlyCommands(cmd, parent), examplesSection(cmd)];
      const terminal = stdoutIsTerminal();
      // Loaded here: only help needs it (the start-up of every other command stays as small).
      const { layoutHelp } = await import("./help-layout.ts");
      const usage = layoutHelp(
        sections
          .map((section) => section.trim())
          .filter((section) => section !== "")
          .join("\n\n"),
        terminal ? process.stdout.columns : undefined,
      );
      printResult(terminal ? usage : stripColours(usage));
      process.exit(exitCodeSoFar());
    }
    if (rawArgs[0] === "--version") {
      printResult(version);
      process.exit(exitCodeSoFar());
    }
    const command = rawArgs[0];
    if (command !== undefined && Object.hasOwn((await resolve(root.subCommands)) ?? {}, command)) {
      // Before anything reads a record: one another user could have swapped is never run. `completion`
      // and `version` (the bug-report command) read no state. Shell completion's name lister prints nothing
      // rather than an error: there it lists no names.
      if (command !== "completion" && command !== "version")
        await assertOwnStateDirectories().catch((err: unknown) => {
          if (command === "__complete") process.exit(0);
          throw err;
        });
      // Loaded here, not imported: --version and --help stay free of it.
      await (await import("./stale-client-entries.ts")).pruneStaleClientEntries(command);
    }
    const [target, targetArgs] = await pastRouters(root, rawArgs);
    await runTarget(target, targetArgs);
    // A command that did its work but must report a failure too (`list` with a record it could not read).
    process.exit(exitCodeSoFar());
  } catch (err) {
    process.exit(reportError(await translateCittyError(err, root, rawArgs)));
  }
}

/** 0, unless something already said it failed: output that could not be written (printResult), a record `list` could not read. */
function exitCodeSoFar(): number {
  return typeof process.exitCode === "number" ? process.exitCode : 0;
}

async function assertOwnStateDirectories(): Promise<void> {
  const [{ resolvePaths }, { assertPrivateDirectories }] = await Promise.all([
    import("../state/paths.ts"),
    import("../state/private-dirs.ts"),
  ]);
  assertPrivateDirectories(resolvePaths());
}

/**
 * The command the leading words name, skipping the commands that only route (the root,
 * `registry`, `group`, …: no run, setup or cleanup, and only boolean options, so a leading
 * word is unambiguously a subcommand). citty would parse the whole argv again at each level
 * it passes through; on `mcpmgr registry list` those parses were a tenth of the start-up. A
 * word that names no subcommand stops here, and citty reports it as before. An option such a
 * command does not declare is an error here: citty would drop it and run the subcommand after
 * it (`mcpmgr --frob list`), or take its value for the command (`mcpmgr --format json list`).
 */
export async function pastRouters(root: CommandDef, rawArgs: readonly string[]): Promise<[CommandDef, string[]]> {
  let cmd = root;
  let args = [...rawArgs];
  const path: string[] = [];
  for (;;) {
    const word = args[0];
    // A command without subcommands is where dispatch ends: its options are its own to check.
    if (word === undefined || cmd.subCommands === undefined) break;
    const argsDef = await resolve(cmd.args);
    if (!onlyRoutes(cmd, argsDef)) break;
    if (word.startsWith("-")) {
      if (word !== "--") rejectUndeclaredOption(word, argsDef ?? {}, path);
      break;
    }
    const subCommands = (await resolve(cmd.subCommands)) ?? {};
    if (!Object.hasOwn(subCommands, word)) {
      // citty would take an inherited name ("toString", "constructor") for a command and exit 0 silently.
      if (word in subCommands) throw Object.assign(new Error(`unknown command ${word}`), { code: "E_UNKNOWN_COMMAND" });
      break;
    }
    const next = subCommands[word];
    if (next === undefined) break;
    cmd = await resolve(next);
    args = args.slice(1);
    path.push(word);
  }
  return [cmd, args];
}

/** The spellings of a command's options: `--name`, `--no-name` for a flag, `-alias`. */
function optionSpellings(argsDef: ArgsDef): string[] {
  return Object.entries(argsDef).flatMap(([name, arg]) =>
    arg.type === "positional"
      ? []
      : [
          `--${name}`,
          ...(arg.type === "boolean" ? [`--no-${name}`] : []),
          ...[(arg as { alias?: string | string[] }).alias ?? []].flat().map((alias) => `-${alias}`),
        ],
  );
}

/**
 * Throws for an option a routing command (or the root) does not declare: most likely one of the
 * command's own, written before it. The root's --debug never gets here (run-main takes it out).
 */
function rejectUndeclaredOption(word: string, argsDef: ArgsDef, path: readonly string[]): void {
  const typed = word.split("=")[0] ?? word;
  const spellings = optionSpellings(argsDef);
  if (spellings.includes(typed)) return;
  // Long options only: a short one is a letter away from every other ("-x" → "-h").
  const declared = typed.startsWith("--")
    ? spellings.filter((spelling) => spelling.startsWith("--") && !spelling.startsWith("--no-"))
    : [];
  const where = path.length === 0 ? "" : ` of 'mcpmgr ${path.join(" ")}'`;
  throw new McpmgrError("INVALID_OPTION", `unknown option ${typed}${where}`, {
    hint:
      didYouMean(closeMatches(typed, declared, { nearestOnly: true, limit: 3 })) ??
      "a command's options go after the command, e.g. 'mcpmgr list --format json'",
  });
}

/**
 * citty's runCommand parses the argv into `args` before it calls `run`, but none of our commands
 * reads them: each parses `rawArgs` strictly with config/argv.ts. That parse (node:util, scule's
 * case conversions) was a sixth of `mcpmgr list`'s start-up. A command that only runs (no
 * subcommands, setup, cleanup or plugins) and whose arguments citty cannot reject (none
 * required) is run here, its `args` parsed only if something reads them; any other goes
 * through citty, which reports a missing argument as before.
 */
export async function runTarget(cmd: CommandDef, rawArgs: string[]): Promise<void> {
  const argsDef = (await resolve(cmd.args)) ?? {};
  const hooks = cmd as { plugins?: unknown };
  const runsAlone =
    cmd.run !== undefined &&
    cmd.subCommands === undefined &&
    cmd.setup === undefined &&
    cmd.cleanup === undefined &&
    hooks.plugins === undefined &&
    Object.values(argsDef).every(cittyCannotReject);
  if (!runsAlone || cmd.run === undefined) {
    await runCommand(cmd, { rawArgs });
    return;
  }
  let args: CommandContext["args"] | undefined;
  await cmd.run({
    rawArgs,
    cmd,
    data: undefined,
    get args() {
      args ??= parseArgs(rawArgs, argsDef);
      return args;
    },
  });
}

/** Whether citty's argument parsing can fail on this argument: a required option or positional, or an enum. */
function cittyCannotReject(arg: ArgsDef[string]): boolean {
  if (arg.type === "positional") return arg.required === false || arg.default !== undefined;
  return arg.required !== true && arg.type !== "enum";
}

function onlyRoutes(cmd: CommandDef, args: CommandDef["args"]): boolean {
  const hooks = cmd as { plugins?: unknown };
  if (cmd.run !== undefined && !isRoutingCommand(cmd)) return false;
  if (cmd.setup !== undefined || cmd.cleanup !== undefined || hooks.plugins !== undefined) return false;
  if (cmd.subCommands === undefined) return false;
  return Object.values(args ?? {}).every((arg) => (arg as { type?: string }).type === "boolean");
}

/**
 * Follows leading non-option words into subcommands (and help-only ones), for help; a word that
 * names none where only a subcommand can follow is an unknown command, as it is without --help. The
 * parent handed to citty is named by the whole path ("mcpmgr proxy"), since citty prints
 * only the parent's name before the command's.
 */
async function resolveCommand(
  root: CommandDef,
  args: readonly string[],
): Promise<[CommandDef, CommandDef | undefined]> {
  let cmd = root;
  const path: CommandDef[] = [];
  for (const word of args) {
    if (word.startsWith("-")) break;
    const next = (await resolve(cmd.subCommands))?.[word] ?? helpSubCommandsOf(cmd)?.[word];
    if (next === undefined) {
      // A word a routing command has no subcommand for is a mistyped command, with --help as without:
      // its parent's help would hide the typo (`mcpmgr lsit --help`).
      if (onlyRoutes(cmd, await resolve(cmd.args))) throw (await unknownCommand(root, args)) ?? new Error(word);
      break;
    }
    path.push(cmd);
    cmd = await resolve(next);
  }
  if (path.length <= 1) return [cmd, path[0]];
  const names = await Promise.all(path.map(async (c) => (await resolve(c.meta))?.name ?? ""));
  return [cmd, { meta: { name: names.join(" "), version: (await resolve(root.meta))?.version } }];
}

/**
 * A COMMANDS section for help-only subcommands (proxy stdio). Not citty's own rendering,
 * which would also print them in the usage line after the positionals (`proxy <SERVER_NAME>
 * stdio`), a command line that does not work.
 */
async function helpOnlyCommands(cmd: CommandDef, parent: CommandDef | undefined): Promise<string> {
  const subs = helpSubCommandsOf(cmd);
  if (subs === undefined) return "";
  const prefix = [(await resolve(parent?.meta))?.name, (await resolve(cmd.meta))?.name].filter(Boolean).join(" ");
  const rows = await Promise.all(
    Object.entries(subs).map(
      async ([name, sub]) => [`${prefix} ${name}`, (await resolve(sub.meta))?.description ?? ""] as const,
    ),
  );
  const width = Math.max(...rows.map(([label]) => label.length));
  const lines = rows.map(([label, description]) => `  ${label.padEnd(width)}    ${description}`);
  return `COMMANDS\n\n${lines.join("\n")}\n\nUse '${prefix} <command> --help' for that command's own arguments and options.`;
}

/** An EXAMPLES section (citty's help has none): each command line under a comment saying what it does. */
function examplesSection(cmd: CommandDef): string {
  const examples = examplesOf(cmd);
  if (examples === undefined || examples.length === 0) return "";
  const blocks = examples.map(({ description, command }) => `  # ${description}\n  ${command}`);
  return `EXAMPLES\n\n${blocks.join("\n\n")}`;
}

async function resolve<T>(value: T | (() => T | Promise<T>) | Promise<T>): Promise<T> {
  return typeof value === "function" ? await (value as () => T | Promise<T>)() : await value;
}

/**
 * citty colours help unless NO_COLOR=1; a pipe or a file gets it plain. Asked only when help
 * is printed, and with fstat, not node:tty's isatty: node:tty loads Node's stream classes, ~2 ms
 * of start-up (bench `cli-startup`), while node:fs costs nothing more once citty's node:util is
 * loaded. A terminal is a character device; so is /dev/null, which may as well get colours.
 */
function stdoutIsTerminal(): boolean {
  const { fstatSync } = require("node:fs") as typeof import("node:fs");
  try {
    return fstatSync(1).isCharacterDevice();
  } catch {
    return false;
  }
}

function stripColours(text: string): string {
  return text.replace(/\u001b\[[0-9;]*m/g, "");
}

async function translateCittyError(err: unknown, root: CommandDef, rawArgs: readonly string[]): Promise<unknown> {
  const code = (err as { code?: string } | undefined)?.code;
  const message = stripColours(errorMessage(err));
  if (code === "E_UNKNOWN_COMMAND") {
    return (
      (await unknownCommand(root, rawArgs)) ??
      new McpmgrError("INVALID_ARGUMENT", message.toLowerCase(), { hint: "run 'mcpmgr --help' to see the commands" })
    );
  }
  if (code === "E_NO_COMMAND") {
    // An option the root does not declare never gets here: pastRouters reports it.
    return new McpmgrError("INVALID_ARGUMENT", "no command given", {
      hint: "try 'mcpmgr proxy NAME --target-uri URL' or 'mcpmgr --help'",
    });
  }
  if (code === "EARG") {
    // The command's own words for a missing positional, when it has them.
    const missing = /^Missing required positional argument: (\S+)/.exec(message)?.[1];
    const [cmd, parent] = await resolveCommand(root, rawArgs);
    const args = await resolve(cmd.args);
    if (missing && args) {
      const names = [(await resolve(parent?.meta))?.name, (await resolve(cmd.meta))?.name].filter(Boolean);
      return missingPositional(names.join(" "), args, missing);
    }
    return new McpmgrError("INVALID_ARGUMENT", message, { hint: "see --help" });
  }
  return err;
}

/**
 * Commands of the tools an MCP user comes from (Docker's `ps`, ToolHive's and npm's words), far from
 * mcpmgr's own by spelling: said what mcpmgr calls them, and that mcpmgr does not update itself.
 */
const UPGRADE_HINT =
  "mcpmgr does not update itself: upgrade it the way you installed it (brew upgrade mcpmgr, npm install -g mcpmgr@latest, scoop update mcpmgr, or a new download: docs/install.md#upgrade)";
const OTHER_TOOLS_WORDS: Readonly<Record<string, string>> = {
  ls: "'mcpmgr list' lists the workloads",
  ps: "'mcpmgr list' lists the workloads",
  status: "'mcpmgr list' shows each workload's status; 'mcpmgr client status' the AI clients'",
  remove: "did you mean 'mcpmgr rm'?",
  delete: "did you mean 'mcpmgr rm'?",
  search: "did you mean 'mcpmgr registry search WORDS'?",
  install: "'mcpmgr run NAME' runs a server from the registry ('mcpmgr registry list' shows them)",
  upgrade: UPGRADE_HINT,
  update: UPGRADE_HINT,
  "self-update": UPGRADE_HINT,
};

/**
 * Words with the meaning of a command that is spelt otherwise at its level (`secret ls`, `secret rm`, `group
 * delete`, `client add`): no spelling match finds those, and each level names the same act differently.
 */
const SAME_MEANING: Readonly<Record<string, readonly string[]>> = {
  ls: ["list"],
  rm: ["delete", "remove"],
  remove: ["rm", "delete"],
  delete: ["rm", "remove"],
  add: ["create", "register", "set"],
  show: ["get", "info"],
  list: ["list-registered-clients"],
};

/**
 * The word citty found no command for, with the commands of its level nearest to it ("lsit" →
 * 'mcpmgr list', "group lsit" → 'mcpmgr group list'). Follows the words as citty does.
 */
async function unknownCommand(root: CommandDef, rawArgs: readonly string[]): Promise<McpmgrError | undefined> {
  let cmd = root;
  const path: string[] = [];
  for (const word of rawArgs) {
    if (word === "--") break;
    if (word.startsWith("-")) continue;
    const subs = await resolve(cmd.subCommands);
    if (subs === undefined) return undefined;
    const next = Object.hasOwn(subs, word) ? subs[word] : undefined;
    if (next !== undefined) {
      path.push(word);
      cmd = await resolve(next);
      continue;
    }
    const where = ["mcpmgr", ...path].join(" ");
    const visible = await visibleSubcommands(cmd);
    const nearest = closeMatches(word, visible, { nearestOnly: true, limit: 3 });
    const otherTools =
      path.length === 0 && Object.hasOwn(OTHER_TOOLS_WORDS, word) ? OTHER_TOOLS_WORDS[word] : undefined;
    const sameMeaning = Object.hasOwn(SAME_MEANING, word)
      ? SAME_MEANING[word]?.find((name) => visible.includes(name))
      : undefined;
    return new McpmgrError("INVALID_ARGUMENT", `unknown command '${[...path, word].join(" ")}'`, {
      hint:
        didYouMean(nearest.map((name) => `'${where} ${name}'`)) ??
        otherTools ??
        didYouMean(sameMeaning === undefined ? [] : [`'${where} ${sameMeaning}'`]) ??
        `run '${where} --help' to see the commands`,
    });
  }
  return undefined;
}

/** The names help lists for a command's subcommands (from the summaries, so nothing is loaded for the root). */
async function visibleSubcommands(cmd: CommandDef): Promise<string[]> {
  const subs = subCommandSummariesOf(cmd) ?? (await resolve(cmd.subCommands)) ?? {};
  const names: string[] = [];
  for (const [name, sub] of Object.entries(subs)) {
    if (!(await resolve((await resolve(sub)).meta))?.hidden) names.push(name);
  }
  return names;
}
