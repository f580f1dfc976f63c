/**
 * The two tools a gateway lists in search mode instead of its group's tools, and what their calls mean:
 * - `find_tool {query, limit?}` answers the best matches (find-answer.ts renders them);
 * - `call_tool {name, arguments?}` resolves a gateway name and checks the arguments against that tool's
 *   real inputSchema; the gateway then calls it exactly as a direct call by that name.
 * A third tool (say, "describe a tool by name") would save nothing: find_tool already returns the schema.
 * Mistakes come back as tool results with isError, which a model reads and corrects, not as protocol errors.
 * Pure: the gateway does the I/O.
 */
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { closestNames } from "./closest-names.ts";
import type { IndexedTool, ToolSearchIndex } from "./tool-index.ts";
import { checkArguments } from "./validate-arguments.ts";
import { isObject } from "../../objects.ts";

export const FIND_TOOL = "find_tool";
export const CALL_TOOL = "call_tool";
const DEFAULT_FIND_LIMIT = 5;
const MAX_FIND_LIMIT = 20;

/** Kept short on purpose: these two definitions are the whole tools/list a model reads in search mode. */
export const searchModeTools: readonly Tool[] = [
  {
    name: FIND_TOOL,
    description:
      "Find this gateway's tools for a task. Returns the best matches first, each with its name, description and inputSchema; run one with call_tool or by its name.",
    inputSchema: {
      type: "object",
      properties: {
        query: { type: "string", description: "What you want to do, in plain words" },
        limit: { type: "integer", minimum: 1, maximum: MAX_FIND_LIMIT, default: DEFAULT_FIND_LIMIT },
      },
      required: ["query"],
    },
    outputSchema: {
      type: "object",
      properties: {
        tools: {
          type: "array",
          items: {
            type: "object",
            properties: { name: { type: "string" }, description: { type: "string" }, inputSchema: { type: "object" } },
            required: ["name", "inputSchema"],
          },
        },
      },
      required: ["tools"],
    },
    annotations: { readOnlyHint: true },
  },
  {
    name: CALL_TOOL,
    description: "Run a tool found with find_tool, exactly as calling it by its name.",
    inputSchema: {
      type: "object",
      properties: {
        name: { type: "string", description: "The tool's name from find_tool" },
        arguments: { type: "object", description: "Arguments matching its inputSchema" },
      },
      required: ["name"],
    },
  },
];

export function toolError(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

export type FindRequest =
  | { readonly ok: true; readonly query: string; readonly limit: number }
  | { readonly ok: false; readonly result: CallToolResult };

export function parseFindArguments(args: unknown): FindRequest {
  const input = isObject(args) ? args : {};
  const query = input.query;
  if (typeof query !== "string" || query.trim().length === 0) {
    return { ok: false, result: toolError('find_tool needs "query": a non-empty string saying what you want to do.') };
  }
  const limit = input.limit ?? DEFAULT_FIND_LIMIT;
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > MAX_FIND_LIMIT) {
    return {
      ok: false,
      result: toolError(
        `find_tool "limit" must be an integer from 1 to ${MAX_FIND_LIMIT} (default ${DEFAULT_FIND_LIMIT}).`,
      ),
    };
  }
  return { ok: true, query, limit };
}

export type PreparedCall =
  | { readonly ok: true; readonly target: IndexedTool; readonly arguments: Record<string, unknown> }
  | { readonly ok: false; readonly result: CallToolResult };

/**
 * Resolves a `call_tool` request. `allow` is the caller's policy: a tool it may not call is answered
 * exactly like a tool that does not exist, and is never suggested.
 */
export function prepareToolCall(
  index: ToolSearchIndex,
  args: unknown,
  allow: (gatewayName: string) => boolean = () => true,
): PreparedCall {
  const input = isObject(args) ? args : {};
  const name = input.name;
  if (typeof name !== "string" || name.length === 0) {
    return { ok: false, result: toolError('call_tool needs "name": a tool name from find_tool.') };
  }
  const target = allow(name) ? index.lookup(name) : undefined;
  if (!target) {
    const suggestions = closestNames(name, index.gatewayNames().filter(allow));
    const hint = suggestions.length > 0 ? ` Closest names: ${suggestions.join(", ")}.` : "";
    const shown = name.length > 100 ? `${name.slice(0, 99)}…` : name;
    return { ok: false, result: toolError(`No tool named "${shown}".${hint} Use find_tool to search.`) };
  }
  const toolArguments = input.arguments ?? {};
  if (!isObject(toolArguments)) {
    return { ok: false, result: toolError(`call_tool "arguments" must be an object (the arguments of ${name}).`) };
  }
  const problem = argumentsProblem(name, target.tool.inputSchema, toolArguments);
  if (problem) return { ok: false, result: problem };
  return { ok: true, target, arguments: toolArguments };
}

/**
 * The error result for arguments that do not match a tool's inputSchema, or undefined when they do.
 * `name` is the tool's name as the caller wrote it.
 */
export function argumentsProblem(name: string, inputSchema: unknown, args: unknown): CallToolResult | undefined {
  const check = checkArguments(inputSchema, args);
  if (check.ok) return undefined;
  return toolError(`Arguments do not match the inputSchema of ${name}: ${check.problems.join("; ")}.`);
}
