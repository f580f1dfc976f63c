/**
 * A `find_tool` answer: one text a model reads top to bottom, plus the same tools as structuredContent.
 *
 * Each match gives its gateway name, its description and its inputSchema as compact JSON. The schema's
 * structure is always whole (properties, types, required, enums, defaults: what a correct call needs),
 * leaving out only `$schema`, a dialect URI that tells a model nothing. To keep 5 results within ~1,500
 * tokens (more results: proportionally more), an answer that would pass that budget caps prose, in this
 * order, and only as far as needed: tool descriptions (not below 200 characters), then descriptions inside schemas (not below 60).
 * A capped answer says so; structuredContent always carries every description and schema unchanged.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { ToolSearchHit } from "./tool-index.ts";

/** Characters of text (~4 per token) a 5-result answer aims to stay under; more results get more in proportion. */
export const TEXT_BUDGET = 6000;
const MIN_TOOL_DESCRIPTION = 200;
const MIN_SCHEMA_DESCRIPTION = 60;

function shorten(text: string, length: number): string {
  if (text.length <= length) return text;
  const cut = text.slice(0, length - 1);
  const atWord = cut.replace(/\s+\S*$/, "");
  return `${atWord.length > length * 0.6 ? atWord : cut}…`;
}

/** The schema without `$schema`, every `description` string inside it capped at `cap` characters. */
function schemaText(schema: unknown, cap: number): string {
  if (typeof schema !== "object" || schema === null) return '{"type":"object"}';
  const { $schema: _dialect, ...rest } = schema as Record<string, unknown>;
  return JSON.stringify(rest, (key, value) =>
    key === "description" && typeof value === "string" ? shorten(value.replace(/\s+/g, " "), cap) : value,
  );
}

function header(fullQuery: string, count: number, capped: boolean): string {
  // Echo the query so the model sees what was searched, but not a pasted document.
  const query = shorten(fullQuery.replace(/\s+/g, " ").trim(), 100);
  if (count === 0) return `No tool matches "${query}". Try other words for the task.`;
  const what = count === 1 ? "1 tool" : `${count} tools`;
  const note = capped ? " Long descriptions are shortened here (…); structuredContent has them whole." : "";
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

export function renderFindAnswer(query: string, hits: readonly ToolSearchHit[]): CallToolResult {
  const entries = hits.map((hit) => ({
    name: hit.gatewayName,
    description: (hit.tool.description ?? "").replace(/\s+/g, " ").trim(),
    schema: hit.tool.inputSchema,
  }));
  const render = (descriptionCap: number, schemaCap: number) => {
    const capped = descriptionCap !== Number.POSITIVE_INFINITY || schemaCap !== Number.POSITIVE_INFINITY;
    return [
      header(query, entries.length, capped),
      ...entries.map((entry, i) => {
        const description = shorten(entry.description, descriptionCap);
        return `${i + 1}. ${entry.name}${description ? `\n${description}` : ""}\ninputSchema: ${schemaText(entry.schema, schemaCap)}`;
      }),
    ].join("\n\n");
  };

  const budget = TEXT_BUDGET * Math.max(1, entries.length / 5);
  const full = Number.POSITIVE_INFINITY;
  let text = render(full, full);
  if (text.length > budget) {
    const longestDescription = Math.max(0, ...entries.map((entry) => entry.description.length));
    const descriptionCap = largestFitting(
      MIN_TOOL_DESCRIPTION,
      Math.max(MIN_TOOL_DESCRIPTION, longestDescription),
      (cap) => render(cap, full).length <= budget,
    );
    text = render(descriptionCap, full);
    if (text.length > budget) {
      const schemaCap = largestFitting(
        MIN_SCHEMA_DESCRIPTION,
        Math.max(MIN_SCHEMA_DESCRIPTION, ...entries.map((entry) => JSON.stringify(entry.schema ?? {}).length)),
        (cap) => render(descriptionCap, cap).length <= budget,
      );
      text = render(descriptionCap, schemaCap);
    }
  }

  return {
    content: [{ type: "text", text }],
    structuredContent: {
      tools: hits.map((hit) => ({
        name: hit.gatewayName,
        ...(hit.tool.description !== undefined ? { description: hit.tool.description } : {}),
        inputSchema: hit.tool.inputSchema ?? { type: "object" },
      })),
    },
  };
}
