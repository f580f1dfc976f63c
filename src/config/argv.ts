/**
 * Strict argv parsing against an option table. citty dispatches commands and renders
 * help, but its parser keeps only the last of repeated options and accepts unknown
 * ones; node:util's parseArgs in strict mode does neither, and valibot then turns
 * every raw string into a typed value. Nothing given on the command line is dropped.
 */
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import * as v from "valibot";
import { McpmgrError } from "../errors.ts";
import type { OptionSpec, OptionTable, OptionValues } from "./option-spec.ts";
import { firstIssueMessage } from "./values.ts";

export interface ParsedArgv<Table extends OptionTable> {
  readonly values: OptionValues<Table>;
  /** Options that appeared on the command line (long names), as opposed to defaults. */
  readonly given: ReadonlySet<keyof Table & string>;
  readonly positionals: readonly string[];
  /** Everything after a standalone `--`, for the MCP server. */
  readonly passthrough: readonly string[];
}

export function parseArgv<Table extends OptionTable>(argv: readonly string[], table: Table, command: string): ParsedArgv<Table> {
  const dashDash = argv.indexOf("--");
  const own = dashDash === -1 ? [...argv] : argv.slice(0, dashDash);
  const passthrough = dashDash === -1 ? [] : argv.slice(dashDash + 1);

  const { args, booleans } = extractBooleanForms(own, table);
  const tokens = tokenize(args, table, command);

  const raw = new Map<string, string[] | boolean>(booleans);
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === "positional") {
      positionals.push(token.value);
      continue;
    }
    if (token.kind !== "option") continue;
    const spec = table[token.name] as OptionSpec;
    if (spec.kind === "boolean") {
      raw.set(token.name, true);
      continue;
    }
    const values = (raw.get(token.name) as string[] | undefined) ?? [];
    if (!spec.repeatable && values.length > 0) {
      throw new McpmgrError("INVALID_OPTION", `--${token.name} was given more than once`, { hint: `give --${token.name} once` });
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
  throw new McpmgrError("INVALID_OPTION", `--${name} ${JSON.stringify(text)}: ${firstIssueMessage(result.issues)}`, {
    hint: spec.hint ?? `see --help for the expected format of --${name}`,
  });
}

/**
 * Go-style CLIs (and users' muscle memory) write `--flag=false` and `--no-flag`;
 * node's parser rejects both for booleans, so they are resolved here first.
 */
function extractBooleanForms(args: string[], table: OptionTable) {
  const booleans = new Map<string, boolean>();
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const prev = args[i - 1];
    const isValueOfPrevious = prev !== undefined && takesSeparateValue(prev, table);
    if (!isValueOfPrevious && arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
      if (eq !== -1 && table[name]?.kind === "boolean") {
        const text = arg.slice(eq + 1).toLowerCase();
        if (text !== "true" && text !== "false") {
          throw new McpmgrError("INVALID_OPTION", `--${name} ${JSON.stringify(arg.slice(eq + 1))}: must be true or false`, {
            hint: `write --${name}, --${name}=false or --no-${name}`,
          });
        }
        booleans.set(name, text === "true");
        continue;
      }
      if (eq === -1 && name.startsWith("no-") && table[name.slice(3)]?.kind === "boolean") {
        booleans.set(name.slice(3), false);
        continue;
      }
    }
    rest.push(arg);
  }
  return { args: rest, booleans };
}

function takesSeparateValue(arg: string, table: OptionTable): boolean {
  if (arg.includes("=")) return false;
  if (arg.startsWith("--")) return table[arg.slice(2)]?.kind === "string";
  if (/^-[A-Za-z]$/.test(arg)) return Object.values(table).some((spec) => spec.short === arg[1] && spec.kind === "string");
  return false;
}

function tokenize(args: string[], table: OptionTable, command: string) {
  const options: ParseArgsOptionsConfig = {};
  for (const [name, spec] of Object.entries(table)) {
    options[name] = { type: spec.kind, ...(spec.short ? { short: spec.short } : {}) };
  }
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: true, tokens: true }).tokens;
  } catch (err) {
    throw translateParseError(err, command);
  }
}

function translateParseError(err: unknown, command: string): McpmgrError {
  const code = (err as { code?: string }).code;
  const message = err instanceof Error ? err.message : String(err);
  const hint = `run 'mcpmgr ${command} --help' to see the options`;
  const flag = /'(-{1,2}[^' ]+)/.exec(message)?.[1] ?? "option";
  switch (code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return new McpmgrError("INVALID_OPTION", `unknown option ${flag}`, {
        hint: `${hint}; to pass it to the MCP server, put it after --`,
      });
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      return /argument missing/.test(message)
        ? new McpmgrError("INVALID_OPTION", `${flag} needs a value`, { hint })
        : new McpmgrError("INVALID_OPTION", `${flag} does not take a value`, { hint });
    default:
      return new McpmgrError("INVALID_OPTION", message.split("\n")[0] ?? "invalid arguments", { hint });
  }
}
