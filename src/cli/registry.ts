/**
 * `mcpmgr registry list|info`: browse the servers `mcpmgr run <name>` knows, from the
 * embedded catalog and the custom registry (MCPMGR_REGISTRY or "registry" in config.json).
 * `--format json` prints documents that are themselves valid registry input: `list` prints
 * {"servers": [...]} and `info` one entry, so either can seed a custom registry file.
 */
import { defineCommand } from "citty";
import { parseArgv } from "../config/argv.ts";
import { stringOption } from "../config/option-spec.ts";
import { oneOf } from "../config/values.ts";
import { McpmgrError } from "../errors.ts";
import { loadRegistry, type Registry } from "../registry/loader.ts";
import { sourceOf, type RegistryEntry } from "../registry/entry.ts";
import { resolvePaths } from "../state/paths.ts";
import { toCittyArgs } from "./citty-args.ts";
import { log, printResult } from "./output.ts";

const formatOptions = {
  format: stringOption({
    description: "Output format: text or json",
    valueHint: "text|json",
    schema: oneOf(["text", "json"]),
    default: "text",
    hint: "use --format text or --format json",
  }),
} as const;

const DESCRIPTION_WIDTH = 72;
const WRAP_WIDTH = 100;

async function openRegistry(): Promise<Registry> {
  const registry = await loadRegistry({ env: process.env, configDir: resolvePaths(process.env).configDir, fetch });
  if (registry.custom !== undefined)
    log.debug(`custom registry ${registry.custom.location} (from ${registry.custom.configuredBy})`);
  return registry;
}

const listCommand = defineCommand({
  meta: { name: "list", description: "List the servers in the registry" },
  args: toCittyArgs(formatOptions),
  async run({ rawArgs }) {
    const { values, positionals } = parseArgv(rawArgs, formatOptions, "registry list", false);
    if (positionals.length > 0) {
      throw new McpmgrError(
        "INVALID_ARGUMENT",
        `'mcpmgr registry list' takes no arguments (got ${positionals.join(" ")})`,
        {
          hint: `to see one server, run 'mcpmgr registry info ${positionals[0]}'`,
        },
      );
    }
    const registry = await openRegistry();
    const entries = registry.list();
    if (values.format === "json") {
      printResult(JSON.stringify({ servers: entries }, null, 2));
      return;
    }
    for (const line of renderTable(entries, registry)) printResult(line);
    if (registry.custom !== undefined) {
      const count = entries.filter((entry) => registry.origin(entry.name) === "custom").length;
      log.info(
        `${count} of ${entries.length} servers (marked *) come from the custom registry ${registry.custom.location}`,
      );
    }
  },
});

const infoCommand = defineCommand({
  meta: { name: "info", description: "Show everything the registry says about one server" },
  args: toCittyArgs(formatOptions, {
    NAME: { description: "Server name (see 'mcpmgr registry list')", required: false },
  }),
  async run({ rawArgs }) {
    const { values, positionals } = parseArgv(rawArgs, formatOptions, "registry info", false);
    const [name, ...extra] = positionals;
    if (name === undefined) {
      throw new McpmgrError("MISSING_OPTION", "'mcpmgr registry info' needs a server name", {
        hint: "run 'mcpmgr registry list' to see the names",
      });
    }
    if (extra.length > 0) {
      throw new McpmgrError(
        "INVALID_ARGUMENT",
        `'mcpmgr registry info' takes one server name (got ${positionals.join(" ")})`,
        { hint: "ask for one server at a time" },
      );
    }
    const registry = await openRegistry();
    const entry = registry.get(name);
    if (values.format === "json") {
      printResult(JSON.stringify(entry, null, 2));
      return;
    }
    // Loaded here: its schemas are built on load, which `registry list` need not pay for.
    const { describePermissions } = await import("../config/permission-profile.ts");
    for (const line of renderInfo(entry, registry, describePermissions)) printResult(line);
  },
});

export default defineCommand({
  meta: {
    name: "registry",
    description: "Browse the MCP server registry (embedded catalog plus your custom registry)",
  },
  args: { help: { type: "boolean", alias: "h", description: "Show this help" } },
  subCommands: { list: listCommand, info: infoCommand },
  // citty calls this after a subcommand too; alone, it means no subcommand was named.
  run({ rawArgs }) {
    if (rawArgs.some((arg) => arg === "list" || arg === "info")) return;
    throw new McpmgrError("INVALID_ARGUMENT", "'mcpmgr registry' needs a subcommand: list or info", {
      hint: "try 'mcpmgr registry list'",
    });
  },
});

function renderTable(entries: readonly RegistryEntry[], registry: Registry): string[] {
  const rows = entries.map((entry) => [
    registry.origin(entry.name) === "custom" ? `${entry.name} *` : entry.name,
    entry.transport,
    sourceOf(entry).runTarget,
    truncate(entry.description, DESCRIPTION_WIDTH),
  ]);
  const header = ["NAME", "TRANSPORT", "SOURCE", "DESCRIPTION"];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]?.length ?? 0)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

function renderInfo(
  entry: RegistryEntry,
  registry: Registry,
  describePermissions: (permissions: RegistryEntry["permissions"]) => string,
): string[] {
  const source = sourceOf(entry);
  const origin =
    registry.origin(entry.name) === "custom"
      ? `custom registry ${registry.custom?.location ?? ""}`
      : "embedded catalog";
  const fields: [string, string | undefined][] = [
    ["transport", entry.transport],
    ["source", `${source.kind} ${source.ref}`],
    ["run target", source.runTarget === source.ref ? undefined : source.runTarget],
    ["version", entry.version],
    ["registry name", entry.qualifiedName],
    ["repository", entry.repository],
    ["tags", entry.tags.length > 0 ? entry.tags.join(", ") : undefined],
    ["args", entry.args.length > 0 ? entry.args.map(quoteArg).join(" ") : "(none)"],
    ["target port", entry.targetPort?.toString()],
    ["permissions", describePermissions(entry.permissions)],
    ["origin", origin],
  ];
  const shown = fields.filter((field): field is [string, string] => field[1] !== undefined);
  const labelWidth = Math.max(...shown.map(([label]) => label.length));
  const lines = [entry.name, `  ${entry.description}`, ""];
  for (const [label, value] of shown) lines.push(`  ${label.padEnd(labelWidth)}  ${value}`);

  lines.push("", `environment variables (${entry.env.length})`);
  if (entry.env.length === 0) lines.push("  (none)");
  const nameWidth = Math.max(0, ...entry.env.map((item) => item.name.length));
  for (const item of entry.env) {
    const marks = `${item.required ? "required" : "optional"}  ${item.secret ? "secret" : "      "}`;
    const fallback = item.default !== undefined ? ` (default: ${item.default})` : "";
    lines.push(`  ${item.name.padEnd(nameWidth)}  ${marks}  ${item.description}${fallback}`.trimEnd());
  }

  lines.push("", `tools (${entry.tools.length})`);
  if (entry.tools.length === 0) lines.push("  (not listed; the server reports them when it runs)");
  lines.push(...wrap(entry.tools, WRAP_WIDTH, "  "));
  return lines;
}

function truncate(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, width - 1).trimEnd()}…`;
}

function quoteArg(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : JSON.stringify(arg);
}

/** Comma-separated items packed into lines of at most `width` characters. */
function wrap(items: readonly string[], width: number, indent: string): string[] {
  const lines: string[] = [];
  let current = "";
  for (const [index, item] of items.entries()) {
    const piece = index < items.length - 1 ? `${item},` : item;
    if (current !== "" && indent.length + current.length + 1 + piece.length > width) {
      lines.push(indent + current);
      current = piece;
    } else {
      current = current === "" ? piece : `${current} ${piece}`;
    }
  }
  if (current !== "") lines.push(indent + current);
  return lines;
}
