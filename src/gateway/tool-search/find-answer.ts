/**
 * A `find_tool` answer: one text a model reads top to bottom, plus the same tools as structuredContent.
 *
 * Each match gives its gateway name, its description and its inputSchema as compact JSON (without
 * `$schema`, a dialect URI that tells a model nothing, nor titles that only repeat a name). The text has a budget: TEXT_BUDGET characters
 * (~1,500 tokens) for 5 results, proportionally more for more. An answer over it gives up detail in
 * this order, each step only as far as needed:
 * 1. tool descriptions are cut at a word (not below 200 characters);
 * 2. descriptions inside schemas are cut (not below 60);
 * 3. long enums show their first values and how many more (not below 8): a value outside them comes back
 *    from call_tool with the whole list;
 * 4. the lowest-ranked matches show their parameters as a list (name: type, required marked) instead of
 *    the schema, from the last match up;
 * 5. whatever still overflows (a tool with hundreds of parameters) is cut at the budget.
 * A shortened answer says so; structuredContent always carries every description and schema unchanged.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { ToolSearchHit } from "./tool-index.ts";
import { isObject } from "../../objects.ts";

/** Characters of text (~4 per token) a 5-result answer stays within; more results get more in proportion. */
export const TEXT_BUDGET = 6000;
const MIN_TOOL_DESCRIPTION = 200;
const MIN_SCHEMA_DESCRIPTION = 60;
const MIN_ENUM_VALUES = 8;
const MAX_OUTLINE_PARAMETERS = 30;

function shorten(text: string, length: number): string {
  if (text.length <= length) return text;
  const cut = text.slice(0, length - 1);
  const atWord = cut.replace(/\s+\S*$/, "");
  return `${atWord.length > length * 0.6 ? atWord : cut}…`;
}

interface Caps {
  readonly description: number;
  readonly schemaDescription: number;
  readonly enumValues: number;
  /** How many of the lowest-ranked matches show a parameter list instead of their schema. */
  readonly outlined: number;
}

const FULL: Caps = {
  description: Number.POSITIVE_INFINITY,
  schemaDescription: Number.POSITIVE_INFINITY,
  enumValues: Number.POSITIVE_INFINITY,
  outlined: 0,
};

const wordsOf = (text: string) => text.replace(/[^A-Za-z0-9]/g, "").toLowerCase();

/**
 * The schema without what tells a model nothing: `$schema`, and the `title`s that only repeat a name
 * (generated schemas give every parameter `"title": "Max Results"` for `max_results`, and the whole
 * schema `"title": "search_toolArguments"`).
 */
function withoutNoise(schema: Record<string, unknown>, name?: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$schema") continue;
    if (key === "title" && typeof value === "string") {
      const title = wordsOf(value);
      if (name === undefined ? title.endsWith("arguments") : title === wordsOf(name)) continue;
    }
    if (key === "properties" && isObject(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([property, child]) => [
          property,
          isObject(child) ? withoutNoise(child, property) : child,
        ]),
      );
    } else out[key] = value;
  }
  return out;
}

/** The schema (without noise), descriptions inside it cut at `caps.schemaDescription`, enums at `caps.enumValues`. */
function schemaText(schema: Record<string, unknown>, caps: Caps): string {
  return JSON.stringify(schema, (key, value) => {
    if (key === "description" && typeof value === "string")
      return shorten(value.replace(/\s+/g, " "), caps.schemaDescription);
    if (key === "enum" && Array.isArray(value) && value.length > caps.enumValues)
      return [...value.slice(0, caps.enumValues), `… ${value.length - caps.enumValues} more`];
    return value;
  });
}

/** "repo: string (required), labels: array, state" — the top-level parameters alone. */
function parameterOutline(schema: unknown): string {
  const properties = isObject(schema) && isObject(schema.properties) ? schema.properties : {};
  const required = new Set(isObject(schema) && Array.isArray(schema.required) ? schema.required : []);
  const names = Object.keys(properties);
  const shown = names.slice(0, MAX_OUTLINE_PARAMETERS).map((name) => {
    const property = properties[name];
    const type = isObject(property) && typeof property.type === "string" ? `: ${property.type}` : "";
    return `${name}${type}${required.has(name) ? " (required)" : ""}`;
  });
  if (names.length > shown.length) shown.push(`… ${names.length - shown.length} more`);
  return shown.length > 0 ? shown.join(", ") : "none";
}

function header(fullQuery: string, count: number, shortened: boolean): string {
  // Echo the query so the model sees what was searched, but not a pasted document.
  const query = shorten(fullQuery.replace(/\s+/g, " ").trim(), 100);
  if (count === 0) return `No tool matches "${query}". Try other words for the task.`;
  const what = count === 1 ? "1 tool" : `${count} tools`;
  const note = shortened
    ? " Shortened to stay brief (…): structuredContent has every description and schema whole, and call_tool says what a wrong argument should be."
    : "";
  return `${what} for "${query}", best first. Run one with call_tool {"name", "arguments"} or by its name.${note}`;
}

/** Largest cap in [low, high] for which `fits(cap)`, or low when none does. */
function largestFitting(low: number, high: number, fits: (cap: number) => boolean): number {
  if (fits(high)) return high;
  while (high - low > 1) {
    const middle = (low + high) >>> 1;
    if (fits(middle)) low = middle;
    else high = middle;
  }
  return low;
}

interface Entry {
  readonly name: string;
  readonly description: string;
  /** The inputSchema without noise (withoutNoise), as shown. */
  readonly schema: Record<string, unknown>;
  /** Its longest enum, its JSON length: the upper bounds of the caps. */
  readonly longestEnum: number;
  readonly schemaLength: number;
}

function longestEnum(value: unknown): number {
  if (Array.isArray(value)) return Math.max(0, ...value.map(longestEnum));
  if (!isObject(value)) return 0;
  let longest = Array.isArray(value.enum) ? value.enum.length : 0;
  for (const child of Object.values(value)) longest = Math.max(longest, longestEnum(child));
  return longest;
}

function entryText(entry: Entry, position: number, caps: Caps, outlined: boolean): string {
  const description = shorten(entry.description, caps.description);
  const schema = outlined
    ? `parameters: ${parameterOutline(entry.schema)}`
    : `inputSchema: ${schemaText(entry.schema, caps)}`;
  return `${position}. ${entry.name}${description ? `\n${description}` : ""}\n${schema}`;
}

function render(query: string, entries: readonly Entry[], caps: Caps): string {
  return [
    header(query, entries.length, caps !== FULL),
    ...entries.map((entry, i) => entryText(entry, i + 1, caps, i >= entries.length - caps.outlined)),
  ].join("\n\n");
}

/** The answer's text within `budget` characters, giving up as little detail as that takes. */
function fittedText(query: string, entries: readonly Entry[], budget: number): string {
  const full = render(query, entries, FULL);
  if (full.length <= budget) return full;
  // Lengths add up (header, entries, two newlines between): a cap is tried without joining the text.
  const headerLength = header(query, entries.length, true).length + 2 * entries.length;
  const fits = (caps: Caps) => {
    let length = headerLength;
    for (const [i, entry] of entries.entries()) {
      length += entryText(entry, i + 1, caps, i >= entries.length - caps.outlined).length;
      if (length > budget) return false;
    }
    return true;
  };
  let caps: Caps = FULL;
  const description = largestFitting(
    MIN_TOOL_DESCRIPTION,
    Math.max(MIN_TOOL_DESCRIPTION, ...entries.map((entry) => entry.description.length)),
    (cap) => fits({ ...caps, description: cap }),
  );
  caps = { ...caps, description };
  if (fits(caps)) return render(query, entries, caps);

  const schemaDescription = largestFitting(
    MIN_SCHEMA_DESCRIPTION,
    Math.max(MIN_SCHEMA_DESCRIPTION, ...entries.map((entry) => entry.schemaLength)),
    (cap) => fits({ ...caps, schemaDescription: cap }),
  );
  caps = { ...caps, schemaDescription };
  if (fits(caps)) return render(query, entries, caps);

  const enumValues = largestFitting(
    MIN_ENUM_VALUES,
    Math.max(MIN_ENUM_VALUES, ...entries.map((entry) => entry.longestEnum)),
    (cap) => fits({ ...caps, enumValues: cap }),
  );
  caps = { ...caps, enumValues };

  for (let outlined = 0; outlined <= entries.length; outlined++) {
    caps = { ...caps, outlined };
    if (fits(caps)) return render(query, entries, caps);
  }
  return shorten(render(query, entries, caps), budget);
}

export function renderFindAnswer(query: string, hits: readonly ToolSearchHit[]): CallToolResult {
  const entries: Entry[] = hits.map((hit) => {
    const schema = isObject(hit.tool.inputSchema) ? withoutNoise(hit.tool.inputSchema) : { type: "object" };
    return {
      name: hit.gatewayName,
      description: (hit.tool.description ?? "").replace(/\s+/g, " ").trim(),
      schema,
      longestEnum: longestEnum(schema),
      schemaLength: JSON.stringify(schema).length,
    };
  });
  const budget = TEXT_BUDGET * Math.max(1, entries.length / 5);
  return {
    content: [{ type: "text", text: fittedText(query, entries, budget) }],
    structuredContent: {
      tools: hits.map((hit) => ({
        name: hit.gatewayName,
        ...(hit.tool.description !== undefined ? { description: hit.tool.description } : {}),
        inputSchema: hit.tool.inputSchema ?? { type: "object" },
      })),
    },
  };
}
