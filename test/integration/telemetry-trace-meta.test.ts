/**
 * Trace context in a request's `params._meta` (MCP 2026-07-28, SEP-414): through `mcpmgr run` in
 * front of a real SDK server, with a real SDK client that also sends a `traceparent` header. The
 * server span continues the `_meta` context (the header's stays as a link), and the upstream's
 * `_meta` names the proxy's span; a malformed `_meta.traceparent` is ignored and passed on as it
 * came; a request without one continues the header's context and gets no `_meta` added. A `--tools`
 * policy checks the rewritten body, and a body that repeats a key is still refused.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { hex, startOtlpReceiver, type OtlpReceiver, type Span } from "../support/otlp-receiver.ts";
import { startRun } from "../support/processes.ts";

setDefaultTimeout(60_000);

const META_TRACE = "0af7651916cd43dd8448eb211c80319c";
const META_SPAN = "00f067aa0ba902b7";
const HEADER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const HEADER_SPAN = "a3ce929d0e0e4736";
const MALFORMED = "00-not-a-trace-context-01";

/** What the upstream saw of each call, by tool name: the `_meta` in the body and the traceparent header. */
const seen = new Map<string, { meta: Record<string, unknown> | null; header: string | null }>();
let receiver: OtlpReceiver;
let upstream: ReturnType<typeof Bun.serve>;

beforeAll(() => {
  receiver = startOtlpReceiver();
  const tools = ["given", "malformed", "none"].map((name) => ({ name, inputSchema: { type: "object" as const } }));
  upstream = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const header = request.headers.get("traceparent");
      const server = new Server({ name: "meta-recorder", version: "1" }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
      server.setRequestHandler(CallToolRequestSchema, async (call) => {
        seen.set(call.params.name, { meta: (call.params._meta as Record<string, unknown>) ?? null, header });
        return { content: [{ type: "text", text: "ok" }] };
      });
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      await server.connect(transport);
      try {
        return await transport.handleRequest(request);
      } finally {
        void server.close();
      }
    },
  });
});

afterAll(async () => {
  await receiver?.stop();
  await upstream?.stop(true);
});

test("_meta.traceparent is the server span's parent and names the proxy's span upstream; malformed or absent, the header's context is continued", async () => {
  const run = await startRun([
    `http://127.0.0.1:${upstream.port}/mcp`,
    "--name",
    "meta-traced",
    ...receiver.otelArgs("1.0"),
    // A policy: the rewritten body goes through the message checks and the tool filter.
    "--tools",
    "given,malformed,none",
  ]);
  const url = run.url;
  try {
    const client = new Client({ name: "traced-client", version: "1" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { traceparent: `00-${HEADER_TRACE}-${HEADER_SPAN}-01` } },
      }),
    );
    await client.callTool({
      name: "given",
      arguments: {},
      _meta: { traceparent: `00-${META_TRACE}-${META_SPAN}-01`, tracestate: "vendor=opaque", other: "kept" },
    });
    await client.callTool({ name: "malformed", arguments: {}, _meta: { traceparent: MALFORMED } });
    await client.callTool({ name: "none", arguments: {} });
    await client.close();
    // A body that repeats a key is not re-serialised (that would keep only the last value): the checks refuse it.
    const repeated = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"given","name":"none","arguments":{},"_meta":{"traceparent":"00-${META_TRACE}-${META_SPAN}-01"}}}`,
    });
    expect(repeated.status).toBe(400);
    expect(await repeated.text()).toContain('the key \\"name\\" appears twice');
  } finally {
    await run.stop();
  }
  // Stopping flushed the spans.
  const spanOf = (name: string) => receiver.spans.find((s) => s.span.name === `tools/call ${name}`)?.span as Span;

  const given = spanOf("given");
  expect(hex(given.traceId)).toBe(META_TRACE);
  expect(hex(given.parentSpanId)).toBe(META_SPAN);
  expect((given.links ?? []).map((link) => `${hex(link.traceId)}-${hex(link.spanId)}`)).toEqual([
    `${HEADER_TRACE}-${HEADER_SPAN}`,
  ]);
  // The server is handed the proxy's span, in `_meta` and in the header alike; the rest of `_meta` as sent.
  const proxySpan = `00-${META_TRACE}-${hex(given.spanId)}-01`;
  expect(seen.get("given")?.meta).toEqual({ traceparent: proxySpan, tracestate: "vendor=opaque", other: "kept" });
  expect(seen.get("given")?.header).toBe(proxySpan);

  const malformed = spanOf("malformed");
  expect(hex(malformed.traceId)).toBe(HEADER_TRACE);
  expect(hex(malformed.parentSpanId)).toBe(HEADER_SPAN);
  expect(malformed.links ?? []).toEqual([]);
  expect(seen.get("malformed")?.meta).toEqual({ traceparent: MALFORMED });
  expect(seen.get("malformed")?.header).toBe(`00-${HEADER_TRACE}-${hex(malformed.spanId)}-01`);

  const none = spanOf("none");
  expect(hex(none.traceId)).toBe(HEADER_TRACE);
  expect(hex(none.parentSpanId)).toBe(HEADER_SPAN);
  expect(seen.get("none")?.meta?.traceparent).toBeUndefined();
  expect(seen.get("none")?.header).toBe(`00-${HEADER_TRACE}-${hex(none.spanId)}-01`);
});
