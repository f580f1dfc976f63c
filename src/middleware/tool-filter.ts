/**
 * `--tools` / `--tools-override` on the wire, for every transport (the bridge and the
 * forwarder both speak HTTP here): tools/list results are filtered and renamed, in JSON
 * answers and in SSE streams (POST answers and legacy GET streams alike); tools/call of a
 * renamed tool goes to its real name (body and the 2026-07-28 `Mcp-Name` header); calls of a
 * hidden tool are refused with a JSON-RPC error. list_changed notifications pass, so clients
 * re-list and get the filtered view. Installed only when one of the options is given.
 * `own`: the endpoint's own tools (a search-mode gateway's find_tool and call_tool), which
 * the options do not name: listed and called as they are. `warn`: told once when the first
 * complete listing lacks tools the options name (tools-offered.ts).
 */
import type { ToolsPolicy } from "../config/tools-policy.ts";
import type { Middleware } from "../proxy/handler.ts";
import { JsonRpcCode, jsonRpcError } from "../proxy/jsonrpc.ts";
import type { JsonRpcMessage } from "../proxy/mcp-message.ts";
import { markDenied } from "./denials.ts";
import { privateToCaller, requestIdsIn, rewriteResults } from "./result-rewriter.ts";
import { defaultMaxMessageBytes } from "../proxy/answer-limit.ts";
import { checkedBody, forwardWith, readRpcBody, rewrittenBody } from "./rpc-body.ts";
import { watchToolsOffered } from "./tools-offered.ts";

interface Tool {
  name: string;
  description?: string;
  [key: string]: unknown;
}

function isToolList(result: unknown): result is { tools: Tool[] } {
  return typeof result === "object" && result !== null && Array.isArray((result as { tools?: unknown }).tools);
}

const none: ReadonlySet<string> = new Set();

/** What a client may call a tool, and what the server calls it; undefined: hidden. */
export function realNameOf(policy: ToolsPolicy, shown: string): string | undefined {
  const renamed = policy.realNames.get(shown);
  if (renamed !== undefined) return renamed;
  const override = policy.overrides.get(shown);
  // The old name of a renamed tool is not a name clients have.
  if (override?.name !== undefined && override.name !== shown) return undefined;
  if (policy.allowed && !policy.allowed.has(shown)) return undefined;
  return shown;
}

/** A tool list as clients see it: hidden tools dropped, renamed and redescribed ones changed. */
export function filterList<T extends Tool>(policy: ToolsPolicy, tools: readonly T[], own = none): T[] {
  const out: T[] = [];
  for (const tool of tools) {
    // A malformed entry is dropped, not a reason to pass the whole list unfiltered.
    if (typeof tool !== "object" || tool === null || typeof tool.name !== "string") continue;
    if (own.has(tool.name)) {
      out.push(tool);
      continue;
    }
    if (policy.allowed && !policy.allowed.has(tool.name)) continue;
    // A server tool that happens to have a name given to a renamed one is shadowed by it.
    if (policy.realNames.has(tool.name) && policy.realNames.get(tool.name) !== tool.name) continue;
    const override = policy.overrides.get(tool.name);
    out.push(
      override
        ? {
            ...tool,
            ...(override.name ? { name: override.name } : {}),
            ...(override.description !== undefined ? { description: override.description } : {}),
          }
        : tool,
    );
  }
  return out;
}

/** A JSON-RPC message with a tools/list result rewritten; others unchanged (same object). */
function rewriteMessage(policy: ToolsPolicy, message: JsonRpcMessage, own: ReadonlySet<string>): JsonRpcMessage {
  if (!isToolList(message.result)) return message;
  return {
    ...message,
    result: privateToCaller({ ...message.result, tools: filterList(policy, message.result.tools, own) }),
  };
}

export function toolFilter(
  policy: ToolsPolicy,
  own = none,
  maxAnswerBytes = defaultMaxMessageBytes,
  warn?: (text: string) => void,
): Middleware {
  const watch = warn ? watchToolsOffered(policy, warn) : undefined;
  return (next) => async (req, ctx) => {
    let forward = req;
    /** Until the first complete listing: this request's tools/list ids and the cursor each gave. */
    let listings: Map<unknown, string | undefined> | undefined;
    const raw = await readRpcBody(req);
    if (raw) {
      const body = checkedBody(req, raw);
      if (body instanceof Response) return markDenied(body);
      const parsed = body.value;
      const messages = body.messages;
      if (watch?.waiting) {
        for (const message of messages) {
          if (message?.method !== "tools/list" || message.id === undefined) continue;
          const cursor = message.params?.cursor;
          (listings ??= new Map()).set(message.id, typeof cursor === "string" ? cursor : undefined);
        }
      }
      const refused: JsonRpcMessage[] = [];
      const header = req.headers.get("mcp-name");
      let realOfHeader: string | undefined;
      // Copies, never the shared parsed messages: audit and telemetry keep what the client sent.
      const outgoing = messages.map((message) => {
        if (message?.method !== "tools/call" || typeof message.params?.name !== "string") return message;
        if (own.has(message.params.name)) return message;
        const shown = message.params.name;
        const real = realNameOf(policy, shown);
        if (real === undefined) {
          refused.push(message);
          return message;
        }
        realOfHeader = real;
        return real === shown ? message : { ...message, params: { ...message.params, name: real } };
      });
      if (refused.length > 0) {
        const errors = refused.map((m) => ({
          jsonrpc: "2.0",
          id: m.id ?? null,
          error: { code: JsonRpcCode.invalidParams, message: `Unknown tool: ${String(m.params?.name)}` },
        }));
        // A streamable-HTTP client (it must accept SSE on POST) reads the error from the answer, as
        // if the server had sent it; a legacy SSE client reads answers only from its stream and
        // would wait forever on a 200, so it gets an HTTP error it does see.
        const status = (req.headers.get("accept") ?? "").includes("text/event-stream") ? 200 : 403;
        const reason = `--tools: ${refused.map((m) => JSON.stringify(m.params?.name)).join(", ")} not available`;
        if (!Array.isArray(parsed))
          return markDenied(
            jsonRpcError(status, JsonRpcCode.invalidParams, `Unknown tool: ${String(refused[0]?.params?.name)}`, {
              id: refused[0]?.id ?? null,
            }),
            { reason },
          );
        // A batch is answered as a whole: every request in it fails rather than half running.
        const all = messages
          .filter((m) => m.id !== undefined)
          .map(
            (m) =>
              errors.find((e) => e.id === m.id) ?? {
                jsonrpc: "2.0",
                id: m.id ?? null,
                error: { code: JsonRpcCode.invalidParams, message: "the batch calls a tool that is not available" },
              },
          );
        return markDenied(Response.json(all, { status }), { reason });
      }
      const changed = outgoing.some((m, i) => m !== messages[i]);
      if (changed) {
        const value = Array.isArray(parsed) ? outgoing : outgoing[0];
        const headers = new Headers(req.headers);
        headers.delete("content-length");
        // The 2026-07-28 Mcp-Name header (checked to match the body) follows the rename.
        if (header !== null && realOfHeader !== undefined) headers.set("mcp-name", realOfHeader);
        forward = forwardWith(req, rewrittenBody(value), headers);
      } else forward = forwardWith(req, body);
    }
    return rewriteResults(
      await next(forward, ctx),
      (message) => {
        if (listings?.has(message.id) && isToolList(message.result)) {
          const following = (message.result as { nextCursor?: unknown }).nextCursor;
          watch?.page(
            listings.get(message.id),
            message.result.tools.flatMap((tool) => (typeof tool?.name === "string" ? [tool.name] : [])),
            typeof following === "string" ? following : undefined,
          );
        }
        return rewriteMessage(policy, message, own);
      },
      (data) => data.includes('"tools"'),
      { maxBytes: maxAnswerBytes, requestIds: () => requestIdsIn(raw) },
    );
  };
}
