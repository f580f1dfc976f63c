/**
 * A deliberately minimal, fast streamable-HTTP MCP upstream for benchmarks.
 *
 * Not the SDK: the SDK's per-request work (validation, transports) would make the
 * upstream the bottleneck and hide what the proxy costs. This answers just enough
 * of MCP for a realistic tools/call loop, always as `application/json`:
 *
 *   POST /mcp  initialize                 -> result + Mcp-Session-Id header
 *              notifications/initialized  -> 202
 *              tools/list, tools/call echo, ping
 *              unknown/missing session    -> 404 (400 when the header is missing)
 *   DELETE /mcp                           -> ends the session
 *   GET /mcp                              -> 405 (no server-initiated stream)
 *
 * Usage: bun bench/upstream.ts [--port N] [--host H] [--path /mcp]
 * Prints `READY http://HOST:PORT/PATH` on stdout once listening (--port 0 = free port).
 */

import { processArg } from "./process-args.ts";
const PROTOCOL_VERSION = "2025-06-18";

interface JsonRpcMessage {
  jsonrpc?: string;
  id?: string | number | null;
  method?: string;
  params?: { name?: string; arguments?: Record<string, unknown>; [k: string]: unknown };
}

const ECHO_TOOL = {
  name: "echo",
  description: "Echoes back the input text",
  inputSchema: {
    type: "object",
    properties: { text: { type: "string", description: "Text to echo" } },
    required: ["text"],
  },
};

const arg = (name: string, fallback?: string): string => processArg("upstream", name, fallback);

const host = arg("host", "127.0.0.1");
const port = Number(arg("port", "0"));
const path = arg("path", "/mcp");

const sessions = new Set<string>();
const JSON_HEADERS = { "content-type": "application/json" };

function rpcError(status: number, id: JsonRpcMessage["id"], code: number, message: string): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", id: id ?? null, error: { code, message } }), {
    status,
    headers: JSON_HEADERS,
  });
}

function result(id: JsonRpcMessage["id"], value: unknown, extraHeaders?: Record<string, string>): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", id, result: value }), {
    status: 200,
    headers: extraHeaders ? { ...JSON_HEADERS, ...extraHeaders } : JSON_HEADERS,
  });
}

function handleCall(msg: JsonRpcMessage): Response {
  switch (msg.method) {
    case "tools/call": {
      const name = msg.params?.name;
      if (name !== "echo")
        return result(msg.id, { content: [{ type: "text", text: `Unknown tool: ${String(name)}` }], isError: true });
      const text = msg.params?.arguments?.text;
      return result(msg.id, { content: [{ type: "text", text: `Echo: ${typeof text === "string" ? text : ""}` }] });
    }
    case "tools/list":
      return result(msg.id, { tools: [ECHO_TOOL] });
    case "ping":
      return result(msg.id, {});
    default:
      return rpcError(200, msg.id, -32601, `Method not found: ${String(msg.method)}`);
  }
}

async function handlePost(req: Request): Promise<Response> {
  let msg: JsonRpcMessage;
  try {
    msg = (await req.json()) as JsonRpcMessage;
  } catch {
    return rpcError(400, null, -32700, "Parse error");
  }
  if (msg === null || typeof msg !== "object" || Array.isArray(msg)) {
    return rpcError(400, null, -32600, "Invalid Request: batches are not supported by the bench upstream");
  }

  if (msg.method === "initialize") {
    const sessionId = crypto.randomUUID();
    sessions.add(sessionId);
    return result(
      msg.id,
      {
        protocolVersion: PROTOCOL_VERSION,
        capabilities: { tools: {} },
        serverInfo: { name: "mcpmgr-bench-upstream", version: "0.1.0" },
      },
      { "mcp-session-id": sessionId },
    );
  }

  const sessionId = req.headers.get("mcp-session-id");
  if (sessionId === null) return rpcError(400, msg.id, -32000, "Bad Request: Mcp-Session-Id header is required");
  if (!sessions.has(sessionId)) return rpcError(404, msg.id, -32001, "Session not found");

  // Notifications and responses from the client: accepted, nothing to say.
  if (msg.id === undefined || msg.method === undefined) return new Response(null, { status: 202 });
  return handleCall(msg);
}

const server = Bun.serve({
  hostname: host,
  port,
  // Keep-alive connections from the load generator stay open between scenarios.
  idleTimeout: 120,
  fetch(req) {
    const url = req.url;
    const slash = url.indexOf("/", url.indexOf("//") + 2);
    const q = url.indexOf("?", slash);
    const reqPath = slash === -1 ? "/" : url.slice(slash, q === -1 ? undefined : q);
    if (reqPath === "/health") return new Response("ok");
    if (reqPath !== path) return new Response("Not Found", { status: 404 });
    switch (req.method) {
      case "POST":
        return handlePost(req);
      case "DELETE": {
        const id = req.headers.get("mcp-session-id");
        if (id === null || !sessions.delete(id)) return new Response(null, { status: 404 });
        return new Response(null, { status: 200 });
      }
      default:
        return new Response("Method Not Allowed", { status: 405, headers: { allow: "POST, DELETE" } });
    }
  },
});

process.stdout.write(`READY http://${host}:${server.port}${path}\n`);

function shutdown() {
  server.stop(true);
  process.exit(0);
}
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
