/**
 * Strict argv parsing against an option table. citty dispatches commands and renders
 * help, but its parser keeps only the last of repeated options and accepts unknown
 * ones; node:util's parseArgs in strict mode does neither, and valibot then turns
 * every raw string into a typed value. Nothing given on the command line is dropped.
 */
import type { ParseArgsOptionsConfig } from "node:util";
import * as v from "valibot";
import { closeMatches, didYouMean } from "../close-matches.ts";
import { McpmgrError, errorMessage } from "../errors.ts";
import type { OptionSpec, OptionTable, OptionValues } from "./option-spec.ts";
import { assignmentSchemas, choicesOf, firstIssueMessage, withValuesHidden } from "./values.ts";
import { quotableUrl } from "./url-credentials.ts";

export interface ParsedArgv<Table extends OptionTable> {
  readonly values: OptionValues<Table>;
  /** Options that appeared on the command line (long names), as opposed to defaults. */
  readonly given: ReadonlySet<keyof Table & string>;
  readonly positionals: readonly string[];
  /** Everything after a standalone `--`, for the MCP server. */
  readonly passthrough: readonly string[];
}

export function parseArgv<Table extends OptionTable>(
  argv: readonly string[],
  table: Table,
  command: string,
  /** Whether arguments after `--` mean something for this command (only for the hint). */
  passthroughAllowed = true,
  /**
   * Hints for options this command does not have but a neighbour has (`proxy --tools`, `run
   * --port`), by long name: a user who knows one command writes its options on the next.
   */
  elsewhere: Readonly<Record<string, string>> = {},
): ParsedArgv<Table> {
  const dashDash = argv.indexOf("--");
  const own = dashDash === -1 ? [...argv] : argv.slice(0, dashDash);
  const passthrough = dashDash === -1 ? [] : argv.slice(dashDash + 1);

  const tokens = tokenize(normaliseBooleanForms(own, table), table, command, passthroughAllowed, elsewhere);

  const raw = new Map<string, string[] | boolean>();
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === "positional") {
      positionals.push(token.value);
      continue;
    }
    if (token.kind !== "option") continue;
    const negated = table[token.name] === undefined && token.name.startsWith("no-");
    const name = negated ? token.name.slice(3) : token.name;
    const spec = table[name] as OptionSpec;
    if (spec.kind === "boolean") {
      raw.set(name, !negated);
      continue;
    }
    const values = (raw.get(token.name) as string[] | undefined) ?? [];
    if (!spec.repeatable && values.length > 0) {
      throw new McpmgrError("INVALID_OPTION", `--${token.name} was given more than once`, {
        hint: `give --${token.name} once`,
      });
    }
    values.push(token.value ?? "");
    raw.set(token.name, values);
  }

  const values: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(table)) {
    const given = raw.get(name);
    if (spec.kind === "boolean") {
      values[name] = typeof given === "boolean" ? given : spec.default;
    } else if (Array.isArray(given)) {
      const parsed = given.map((text) => parseValue(name, spec, text));
      values[name] = spec.repeatable ? Object.freeze(parsed) : parsed[0];
    } else if (spec.repeatable) {
      values[name] = Object.freeze([]);
    } else {
      values[name] = spec.default === undefined ? undefined : parseValue(name, spec, spec.default);
    }
  }

  return Object.freeze({
    values: Object.freeze(values) as OptionValues<Table>,
    given: new Set(raw.keys()) as ReadonlySet<keyof Table & string>,
    positionals,
    passthrough,
  });
}

function parseValue(name: string, spec: OptionSpec & { kind: "string" }, text: string): unknown {
  const result = v.safeParse(spec.schema, text, { abortPipeEarly: true });
  if (result.success) return result.output;
  // A mistyped choice ("--format jsn") gets the nearest one instead of the general advice.
  const nearest = closeMatches(text.trim(), choicesOf(spec.schema), { nearestOnly: true });
  throw new McpmgrError(
    "INVALID_OPTION",
    `--${name} ${JSON.stringify(assignmentSchemas.has(spec.schema) ? withValuesHidden(spec.schema, text) : quotableUrl(text))}: ${firstIssueMessage(result.issues)}`,
    {
      hint:
        didYouMean(nearest.map((choice) => `--${name} ${choice}`)) ??
        spec.hint ??
        `see --help for the expected format of --${name}`,
    },
  );
}

/**
 * Go-style CLIs (and users' muscle memory) write `--flag=false` and `--no-flag`;
 * node's parser rejects both for booleans. They are rewritten to `--flag` or to a
 * synthetic `--no-flag` option, so every occurrence keeps its place and the last wins.
 */
function normaliseBooleanForms(args: readonly string[], table: OptionTable): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const prev = args[i - 1];
    const isValueOfPrevious = prev !== undefined && takesSeparateValue(prev, table);
    const eq = arg.indexOf("=");
    const name = arg.startsWith("--") ? arg.slice(2, eq === -1 ? undefined : eq) : "";
    if (!isValueOfPrevious && eq !== -1 && table[name]?.kind === "boolean") {
      const text = arg.slice(eq + 1).toLowerCase();
      if (text !== "true" && text !== "false") {
        throw new McpmgrError(
          "INVALID_OPTION",
          `--${name} ${JSON.stringify(arg.slice(eq + 1))}: must be true or false`,
          {
            hint: `write --${name}, --${name}=false or --no-${name}`,
          },
        );
      }
      out.push(text === "true" ? `--${name}` : `--no-${name}`);
      continue;
    }
    out.push(arg);
  }
  return out;
}

function takesSeparateValue(arg: string, table: OptionTable): boolean {
  if (arg.includes("=")) return false;
  if (arg.startsWith("--")) return table[arg.slice(2)]?.kind === "string";
  if (/^-[A-Za-z]$/.test(arg))
    return Object.values(table).some((spec) => spec.short === arg[1] && spec.kind === "string");
  return false;
}

type Token = NonNullable<ReturnType<typeof import("node:util").parseArgs>["tokens"]>[number];

function tokenize(
  args: string[],
  table: OptionTable,
  command: string,
  passthroughAllowed: boolean,
  elsewhere: Readonly<Record<string, string>>,
): Token[] {
  // node:util is ~1 ms of start-up (bench `cli-startup`): loaded when there is something to parse, so
  // `mcpmgr list` or `mcpmgr registry list` as typed do without it.
  if (args.length === 0) return [];
  const { parseArgs } = require("node:util") as typeof import("node:util");
  const options: ParseArgsOptionsConfig = {};
  for (const [name, spec] of Object.entries(table)) {
    options[name] = { type: spec.kind, ...(spec.short ? { short: spec.short } : {}) };
    if (spec.kind === "boolean") options[`no-${name}`] = { type: "boolean" };
  }
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: true, tokens: true }).tokens;
  } catch (err) {
    throw translateParseError(err, args, table, command, passthroughAllowed, elsewhere);
  }
}

function translateParseError(
  err: unknown,
  args: readonly string[],
  table: OptionTable,
  command: string,
  passthroughAllowed: boolean,
  elsewhere: Readonly<Record<string, string>>,
): McpmgrError {
  const code = (err as { code?: string }).code;
  const message = errorMessage(err);
  const hint = `run 'mcpmgr ${command} --help' to see the options`;
  // node names options as "'-e, --env <value>'" or "'--port'"; prefer the long name.
  const quoted = /'([^']*)'/.exec(message)?.[1] ?? "";
  const flag = /--[A-Za-z0-9][\w-]*/.exec(quoted)?.[0] ?? /^-[A-Za-z0-9]/.exec(quoted)?.[0];
  switch (code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION": {
      const offending = flag ?? args.find((arg) => arg.startsWith("-") && arg.includes(quoted)) ?? quoted;
      const neighbours = elsewhere[offending.replace(/^--(no-)?/, "")];
      if (offending.startsWith("--") && neighbours !== undefined) {
        return new McpmgrError("INVALID_OPTION", `unknown option ${offending}`, {
          hint: passthroughAllowed ? `${neighbours}; options for the MCP server go after --` : neighbours,
        });
      }
      const suggestion = offending.startsWith("--") ? didYouMean(similarOptions(offending, table)) : undefined;
      if (suggestion !== undefined) {
        return new McpmgrError("INVALID_OPTION", `unknown option ${offending}`, {
          hint: passthroughAllowed ? `${suggestion} Options for the MCP server go after --` : suggestion,
        });
      }
      return new McpmgrError("INVALID_OPTION", `unknown option ${offending}`, {
        hint: passthroughAllowed ? `${hint}; to pass it to the MCP server, put it after --` : hint,
      });
    }
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      if (/argument missing|ambiguous/.test(message)) {
        return new McpmgrError("INVALID_OPTION", `${flag ?? "an option"} needs a value`, {
          // Short options take an attached value (-lVALUE); only long ones take --name=VALUE.
          hint: `write ${flag ?? "--option"} VALUE; a value that starts with '-' must be attached: ${flag && !flag.startsWith("--") ? `${flag}VALUE, or the long option with =VALUE` : `${flag ?? "--option"}=VALUE`}`,
        });
      }
      return new McpmgrError("INVALID_OPTION", `${flag ?? "an option"} does not take a value`, { hint });
    default:
      return new McpmgrError("INVALID_OPTION", message.split("\n")[0] ?? "invalid arguments", { hint });
  }
}

/**
 * The command's own options nearest to a mistyped `--name` ("--proxy-prot" → "--proxy-port"): the
 * visible ones, `--help`, and the `--no-` forms of booleans when that is what was typed.
 */
function similarOptions(offending: string, table: OptionTable): string[] {
  const typed = offending.replace(/^--/, "").replace(/=.*$/, "");
  const names = ["help"];
  for (const [name, spec] of Object.entries(table)) {
    if (spec.hidden) continue;
    names.push(name);
    if (spec.kind === "boolean" && typed.startsWith("no-")) names.push(`no-${name}`);
  }
  return closeMatches(typed, names, { nearestOnly: true, limit: 3 }).map((name) => `--${name}`);
}
