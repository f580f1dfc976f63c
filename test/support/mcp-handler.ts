/**
 * An MCP server as a Handler, for unit tests of the policies in front of it (no sockets): it
 * answers tools/list, prompts/list, resources/list and tools/call from a fixed catalogue, in
 * JSON or, when asked, as an SSE stream, and records every request that reached it. The
 * integration tests run the same policies in front of real servers.
 */
import type { Handler } from "../../src/proxy/handler.ts";

export interface Received {
  readonly method: string;
  readonly headers: Headers;
  /** The parsed body of a POST. */
  readonly body: unknown;
}

export interface ToyServer {
  readonly handler: Handler;
  readonly received: Received[];
}

const catalogue = {
  tools: [
    { name: "echo", description: "says it back", inputSchema: { type: "object" } },
    { name: "admin", description: "does everything", inputSchema: { type: "object" } },
    { name: "secret_tool", description: "hidden by policy", inputSchema: { type: "object" } },
  ],
  prompts: [{ name: "greeting" }, { name: "internal" }],
  resources: [
    { uri: "file:///public.txt", name: "public" },
    { uri: "file:///private.txt", name: "private" },
  ],
};

type Message = { jsonrpc: "2.0"; id?: string | number | null; method?: string; params?: Record<string, unknown> };

function answer(message: Message): unknown {
  switch (message.method) {
    case "tools/list":
      return { tools: catalogue.tools };
    case "prompts/list":
      return { prompts: catalogue.prompts };
    case "resources/list":
      return { resources: catalogue.resources };
    case "tools/call":
      return {
        content: [
          { type: "text", text: `${String(message.params?.name)}:${JSON.stringify(message.params?.arguments ?? {})}` },
        ],
      };
    default:
      return {};
  }
}

/** `sse`: answers POSTs with an event stream (as servers may, when the client accepts it). */
export function toyServer(options: { sse?: boolean } = {}): ToyServer {
  const received: Received[] = [];
  const handler: Handler = async (req) => {
    const body = req.method === "POST" ? ((await req.json()) as Message | Message[]) : undefined;
    received.push({ method: req.method, headers: req.headers, body });
    if (body === undefined) return new Response(null, { status: req.method === "DELETE" ? 200 : 405 });
    const messages = Array.isArray(body) ? body : [body];
    const answers = messages
      .filter((m) => m.id !== undefined && m.method !== undefined)
      .map((m) => ({ jsonrpc: "2.0", id: m.id, result: answer(m) }));
    if (answers.length === 0) return new Response(null, { status: 202 });
    const value = Array.isArray(body) ? answers : answers[0];
    if (!options.sse) return Response.json(value);
    const events = answers.map((a) => `event: message\ndata: ${JSON.stringify(a)}\n\n`).join("");
    return new Response(events, { headers: { "content-type": "text/event-stream" } });
  };
  return { handler, received };
}

/** A JSON-RPC POST to the proxy's endpoint. */
export function rpc(
  message: unknown,
  headers: Record<string, string> = {},
  accept = "application/json, text/event-stream",
): Request {
  return new Request("http://127.0.0.1:8080/mcp", {
    method: "POST",
    headers: { "content-type": "application/json", accept, ...headers },
    body: JSON.stringify(message),
  });
}

/** The JSON-RPC messages of a response, whether JSON or an SSE stream. */
export async function messagesOf(response: Response): Promise<Record<string, any>[]> {
  const text = await response.text();
  if ((response.headers.get("content-type") ?? "").includes("text/event-stream")) {
    return text
      .split("\n")
      .filter((line) => line.startsWith("data: "))
      .flatMap((line) => JSON.parse(line.slice("data: ".length)));
  }
  const parsed = JSON.parse(text) as Record<string, any> | Record<string, any>[];
  return Array.isArray(parsed) ? parsed : [parsed];
}
