/**
 * Registry entries as text, for `mcpmgr registry list` and `info`: a table of entries, and
 * one entry in full (fields, environment variables, tools). Pure, so it is tested without
 * the CLI; `--format json` prints the entries themselves instead.
 */
import { sourceOf, type RegistryEntry } from "./entry.ts";
import type { Registry } from "./loader.ts";

const DESCRIPTION_WIDTH = 72;
const WRAP_WIDTH = 100;

/** `registry list`: one row per entry (custom entries marked *), descriptions truncated. */
export function entryTable(entries: readonly RegistryEntry[], registry: Registry): string[] {
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

/**
 * `registry info`: every field of an entry, its variables and its tools. The permission
 * profile module is loaded here, not at the top: its schemas are built when it loads, a cost
 * `registry list` need not pay.
 */
export async function entryDetails(entry: RegistryEntry, registry: Registry): Promise<string[]> {
  const { describePermissions } = await import("../config/permission-profile.ts");
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
