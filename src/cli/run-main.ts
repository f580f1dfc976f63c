/**
 * Our own runMain around citty's runCommand: citty's would treat a `--help` meant for
 * the MCP server (after `--`) as ours, print stack traces, and exit 1 on usage errors.
 * Here: global flags are read only before `--`, usage errors exit 2 with one line.
 */
import { renderUsage, runCommand, type CommandDef } from "citty";
import { McpmgrError } from "../errors.ts";
import { version } from "../version.ts";
import { enableDebug, printResult, reportError } from "./output.ts";

const globalFlags: ReadonlySet<string> = new Set(["--debug"]);

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- citty's CommandDef is invariant in its args
export async function runMain(root: CommandDef<any>, argv: readonly string[] = process.argv.slice(2)): Promise<never> {
  const end = argv.indexOf("--") === -1 ? argv.length : argv.indexOf("--");
  const own = argv.slice(0, end);
  if (own.includes("--debug")) enableDebug();
  const rawArgs = [...own.filter((arg) => !globalFlags.has(arg)), ...argv.slice(end)];

  try {
    if (rawArgs.length === 0 || own.includes("--help") || own.includes("-h")) {
      const [cmd, parent] = await resolveCommand(root, rawArgs.slice(0, rawArgs.indexOf("--") === -1 ? undefined : rawArgs.indexOf("--")));
      printResult(await renderUsage(cmd, parent));
      process.exit(0);
    }
    if (rawArgs[0] === "--version") {
      printResult(version);
      process.exit(0);
    }
    await runCommand(root, { rawArgs });
    process.exit(0);
  } catch (err) {
    process.exit(reportError(translateCittyError(err)));
  }
}

/** Follows leading non-option words into subcommands, for help. */
async function resolveCommand(root: CommandDef, args: readonly string[]): Promise<[CommandDef, CommandDef | undefined]> {
  let cmd = root;
  let parent: CommandDef | undefined;
  for (const word of args) {
    if (word.startsWith("-")) break;
    const subs = await resolve(cmd.subCommands);
    const next = subs?.[word];
    if (next === undefined) break;
    parent = cmd;
    cmd = await resolve(next);
  }
  return [cmd, parent];
}

async function resolve<T>(value: T | (() => T | Promise<T>) | Promise<T>): Promise<T> {
  return typeof value === "function" ? await (value as () => T | Promise<T>)() : await value;
}

function translateCittyError(err: unknown): unknown {
  const code = (err as { code?: string } | undefined)?.code;
  const message = err instanceof Error ? err.message.replace(/\u001b\[[0-9;]*m/g, "") : "";
  if (code === "E_UNKNOWN_COMMAND") {
    return new McpmgrError("INVALID_ARGUMENT", message.toLowerCase(), { hint: "run 'mcpmgr --help' to see the commands" });
  }
  if (code === "E_NO_COMMAND") {
    return new McpmgrError("INVALID_ARGUMENT", "no command given", { hint: "try 'mcpmgr proxy NAME --target-uri URL' or 'mcpmgr --help'" });
  }
  if (code === "EARG") return new McpmgrError("INVALID_ARGUMENT", message, { hint: "see --help" });
  return err;
}
