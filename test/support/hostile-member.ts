/**
 * A hostile streamable-HTTP MCP server (2025-11-25) on raw Bun.serve, for tests of the bounds
 * mcpmgr puts on what a server sends back: each tool misbehaves in one way (answers larger than a
 * limit, an SSE event that never ends, a log line written with an answer past a limit, resumptions that
 * end at once, a flood of log lines). Sizes
 * are in KiB so tests stay memory-light with a small MCPMGR_MAX_MESSAGE_BYTES.
 */

export interface HostileMemberOptions {
  /** tools/list: "plain", a page of `listKib` KiB ("hugepage"), or HTTP 500 with a `listKib` KiB body ("errbody"). */
  readonly list?: "plain" | "hugepage" | "errbody";
  readonly listKib?: number;
}

export interface HostileMember {
  readonly url: string;
  /** Requests seen, by kind: `get` counts resumptions (GETs with Last-Event-ID). */
  readonly counts: { post: number; get: number; list: number };
  stop(): void;
}

const TOOLS = ["ok", "hugejson", "declaredjson", "giant", "bigevent", "noisybig", "loop", "flood"].map((name) => ({
  name,
  description: name,
  inputSchema: { type: "object" },
}));

const encoder = new TextEncoder();
const KIB = 1024;

/** A body that streams `kib` KiB of `fill` between `head` and `tail`, chunked (no Content-Length). */
function chunked(head: string, kib: number, fill: string, tail: string): ReadableStream<Uint8Array> {
  let sent = 0;
  const block = encoder.encode(fill.repeat(16 * KIB));
  return new ReadableStream({
    start(controller) {
      controller.enqueue(encoder.encode(head));
    },
    pull(controller) {
      if (sent >= kib) {
        if (tail !== "") controller.enqueue(encoder.encode(tail));
        controller.close();
        return;
      }
      controller.enqueue(block);
      sent += 16;
    },
  });
}

export function startHostileMember(options: HostileMemberOptions = {}): HostileMember {
  const counts = { post: 0, get: 0, list: 0 };
  const session = { "mcp-session-id": `hostile-${crypto.randomUUID()}` };
  const sse = { "content-type": "text/event-stream", ...session };
  const json = { "content-type": "application/json", ...session };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      if (req.method === "GET") {
        if (!req.headers.get("last-event-id")) return new Response(null, { status: 405 });
        counts.get++;
        // A resumption that opens a stream with one id event and ends it at once.
        return new Response(`id: again-${counts.get}\nretry: 0\ndata: \n\n`, { headers: sse });
      }
      if (req.method === "DELETE") return new Response(null, { status: 200 });
      counts.post++;
      const message = (await req.json()) as { id?: string | number; method: string; params?: Record<string, unknown> };
      const { id } = message;
      if (message.method === "initialize")
        return Response.json(
          {
            jsonrpc: "2.0",
            id,
            result: {
              protocolVersion: "2025-11-25",
              capabilities: { tools: {}, logging: {} },
              serverInfo: { name: "hostile", version: "1" },
            },
          },
          { headers: session },
        );
      if (id === undefined) return new Response(null, { status: 202, headers: session });
      const idText = JSON.stringify(id);
      if (message.method === "tools/list") {
        counts.list++;
        const kib = options.listKib ?? 0;
        if (options.list === "errbody") return new Response("E\n".repeat((kib * KIB) / 2), { status: 500 });
        if (options.list === "hugepage")
          return new Response(
            chunked(
              `{"jsonrpc":"2.0","id":${idText},"result":{"tools":[{"name":"ok","description":"`,
              kib,
              "D",
              `","inputSchema":{"type":"object"}}]}}`,
            ),
            { headers: json },
          );
        return Response.json({ jsonrpc: "2.0", id, result: { tools: TOOLS } }, { headers: session });
      }
      if (message.method === "logging/setLevel") return Response.json({ jsonrpc: "2.0", id, result: {} });
      if (message.method !== "tools/call")
        return Response.json({ jsonrpc: "2.0", id, error: { code: -32601, message: "no such method" } });
      const name = message.params?.name as string;
      const kib = Number((message.params?.arguments as { kib?: number } | undefined)?.kib ?? 0);
      const text = (value: string) => ({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: value }] } });
      switch (name) {
        case "ok":
          return Response.json(text("fine"), { headers: session });
        case "hugejson": // a JSON answer of `kib` KiB, chunked: its size shows only as it is read
          return new Response(
            chunked(`{"jsonrpc":"2.0","id":${idText},"result":{"content":[{"type":"text","text":"`, kib, "B", `"}]}}`),
            { headers: json },
          );
        case "declaredjson": // the same with a Content-Length
          return new Response(JSON.stringify(text("B".repeat(kib * KIB))), { headers: json });
        case "giant": // one event that never ends: a data line of `kib` KiB, then the stream ends
          return new Response(chunked(`data: "`, kib, "A", ""), { headers: sse });
        case "bigevent": // one whole event of `kib` KiB that answers the call
          return new Response(
            chunked(
              `event: message\ndata: {"jsonrpc":"2.0","id":${idText},"result":{"content":[{"type":"text","text":"`,
              kib,
              "C",
              `"}]}}\n\n`,
            ),
            { headers: sse },
          );
        case "noisybig": {
          // A log line for the call, then its answer of `kib` KiB: both in one write.
          const note = { jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "before" } };
          const events = [note, text("N".repeat(kib * KIB))].map(
            (m) => `event: message\ndata: ${JSON.stringify(m)}\n\n`,
          );
          return new Response(encoder.encode(events.join("")), { headers: sse });
        }
        case "loop": // an id event, then the end: the client resumes, into another such stream
          return new Response("id: first\nretry: 0\ndata: \n\n", { headers: sse });
        case "flood": {
          // `kib` KiB of log notifications for the call, then its answer.
          const line = `event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "L".repeat(1000) } })}\n\n`;
          let sent = 0;
          return new Response(
            new ReadableStream({
              pull(controller) {
                if (sent >= kib * KIB) {
                  controller.enqueue(encoder.encode(`event: message\ndata: ${JSON.stringify(text("flood done"))}\n\n`));
                  controller.close();
                  return;
                }
                const chunk = line.repeat(64);
                controller.enqueue(encoder.encode(chunk));
                sent += chunk.length;
              },
            }),
            { headers: sse },
          );
        }
        default:
          return Response.json({ jsonrpc: "2.0", id, error: { code: -32602, message: `no tool ${name}` } });
      }
    },
  });
  return { url: `http://127.0.0.1:${server.port}/mcp`, counts, stop: () => void server.stop(true) };
}
