/**
 * `--tools` / `--tools-override` on the wire, for every transport (the bridge and the
 * forwarder both speak HTTP here): tools/list results are filtered and renamed, in JSON
 * answers and in SSE streams (POST answers and legacy GET streams alike); tools/call of a
 * renamed tool goes to its real name (body and the 2026-07-28 `Mcp-Name` header); calls of a
 * hidden tool are refused with a JSON-RPC error. list_changed notifications pass, so clients
 * re-list and get the filtered view. Installed only when one of the options is given.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { ToolsPolicy } from "../config/tools-policy.ts";
import type { Middleware } from "../proxy/handler.ts";
import { JsonRpcCode, jsonRpcError } from "../proxy/jsonrpc.ts";
import { markDenied } from "./denials.ts";

interface Message {
  jsonrpc?: string;
  id?: string | number | null;
  method?: string;
  params?: { name?: unknown; [key: string]: unknown };
  result?: { tools?: unknown; [key: string]: unknown };
}

interface Tool {
  name: string;
  description?: string;
  [key: string]: unknown;
}

function isToolList(result: Message["result"]): result is { tools: Tool[] } {
  return Array.isArray(result?.tools) && result.tools.every((t) => typeof t === "object" && t !== null && typeof (t as Tool).name === "string");
}

/** What a client may call a tool, and what the server calls it; undefined: hidden. */
function realNameOf(policy: ToolsPolicy, shown: string): string | undefined {
  const renamed = policy.realNames.get(shown);
  if (renamed !== undefined) return renamed;
  const override = policy.overrides.get(shown);
  // The old name of a renamed tool is not a name clients have.
  if (override?.name !== undefined && override.name !== shown) return undefined;
  if (policy.allowed && !policy.allowed.has(shown)) return undefined;
  return shown;
}

function filterList(policy: ToolsPolicy, tools: Tool[]): Tool[] {
  const out: Tool[] = [];
  for (const tool of tools) {
    if (policy.allowed && !policy.allowed.has(tool.name)) continue;
    // A server tool that happens to have a name given to a renamed one is shadowed by it.
    if (policy.realNames.has(tool.name) && policy.realNames.get(tool.name) !== tool.name) continue;
    const override = policy.overrides.get(tool.name);
    out.push(override ? { ...tool, ...(override.name ? { name: override.name } : {}), ...(override.description !== undefined ? { description: override.description } : {}) } : tool);
  }
  return out;
}

/** A JSON-RPC message with a tools/list result rewritten; others unchanged (same object). */
function rewriteMessage(policy: ToolsPolicy, message: Message): Message {
  if (!isToolList(message.result)) return message;
  return { ...message, result: { ...message.result, tools: filterList(policy, message.result.tools) } };
}

function serialise(event: EventSourceMessage): string {
  let text = "";
  if (event.id !== undefined) text += `id: ${event.id}\n`;
  if (event.event !== undefined) text += `event: ${event.event}\n`;
  for (const line of event.data.split("\n")) text += `data: ${line}\n`;
  return `${text}\n`;
}

/** Rewrites tools/list results inside an SSE stream; other events and comments pass unchanged in meaning. */
function rewriteEventStream(policy: ToolsPolicy, body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  let out!: TransformStreamDefaultController<Uint8Array>;
  const parser = createParser({
    onEvent(event) {
      let data = event.data;
      if (data.includes('"tools"')) {
        try {
          const parsed = JSON.parse(data) as Message | Message[];
          const next = Array.isArray(parsed) ? parsed.map((m) => rewriteMessage(policy, m)) : rewriteMessage(policy, parsed);
          data = JSON.stringify(next);
        } catch {
          // Not JSON: not ours to touch.
        }
      }
      out.enqueue(encoder.encode(serialise({ ...event, data })));
    },
    onRetry(retry) {
      out.enqueue(encoder.encode(`retry: ${retry}\n\n`));
    },
    onComment(comment) {
      // Keep-alives must keep flowing.
      out.enqueue(encoder.encode(`:${comment}\n\n`));
    },
  });
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      start(controller) {
        out = controller;
      },
      transform(chunk) {
        parser.feed(decoder.decode(chunk, { stream: true }));
      },
    }),
  );
}

async function rewriteResponse(policy: ToolsPolicy, response: Response): Promise<Response> {
  const type = response.headers.get("content-type") ?? "";
  if (response.body === null) return response;
  if (type.includes("text/event-stream")) {
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    return new Response(rewriteEventStream(policy, response.body), { status: response.status, statusText: response.statusText, headers });
  }
  if (!type.includes("json")) return response;
  const text = await response.text();
  let body = text;
  try {
    const parsed = JSON.parse(text) as Message | Message[];
    body = JSON.stringify(Array.isArray(parsed) ? parsed.map((m) => rewriteMessage(policy, m)) : rewriteMessage(policy, parsed));
  } catch {
    // Not JSON after all: pass it on as it came.
  }
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}

export function toolFilter(policy: ToolsPolicy): Middleware {
  return (next) => async (req, ctx) => {
    let forward = req;
    if (req.method === "POST" && (req.headers.get("content-type") ?? "").includes("json")) {
      const text = await req.text();
      let parsed: Message | Message[] | undefined;
      try {
        parsed = JSON.parse(text) as Message | Message[];
      } catch {
        parsed = undefined; // malformed: the server (or bridge) answers it
      }
      const messages = parsed === undefined ? [] : Array.isArray(parsed) ? parsed : [parsed];
      const refused: Message[] = [];
      let rewritten = false;
      let renamedTo: string | undefined;
      for (const message of messages) {
        if (message?.method !== "tools/call" || typeof message.params?.name !== "string") continue;
        const real = realNameOf(policy, message.params.name);
        if (real === undefined) refused.push(message);
        else if (real !== message.params.name) {
          message.params.name = real;
          renamedTo = real;
          rewritten = true;
        }
      }
      if (refused.length > 0) {
        const errors = refused.map((m) => ({ jsonrpc: "2.0", id: m.id ?? null, error: { code: JsonRpcCode.invalidParams, message: `Unknown tool: ${String(m.params?.name)}` } }));
        if (!Array.isArray(parsed)) return markDenied(jsonRpcError(200, JsonRpcCode.invalidParams, `Unknown tool: ${String(refused[0]?.params?.name)}`, { id: refused[0]?.id ?? null }));
        // A batch is answered as a whole: every request in it fails rather than half running.
        const all = messages.filter((m) => m.id !== undefined).map((m) => errors.find((e) => e.id === m.id) ?? { jsonrpc: "2.0", id: m.id ?? null, error: { code: JsonRpcCode.invalidParams, message: "the batch calls a tool that is not available" } });
        return markDenied(Response.json(all));
      }
      const headers = new Headers(req.headers);
      headers.delete("content-length");
      if (renamedTo !== undefined && headers.has("mcp-name")) headers.set("mcp-name", renamedTo);
      forward = new Request(req, { body: rewritten ? JSON.stringify(parsed) : text, headers });
    }
    return rewriteResponse(policy, await next(forward, ctx));
  };
}
