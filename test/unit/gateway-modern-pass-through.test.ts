/**
 * Which 2026-07-28 tools/call the gateway's fast lane takes (src/gateway/modern-pass-through.ts
 * `plainModernCall`): only the plain form, whose every part the SDK would read as it is. Anything
 * else must be left to the SDK, which serves it or refuses it as the revision says.
 */
import { expect, test } from "bun:test";
import { plainModernCall } from "../../src/gateway/modern-pass-through.ts";
import { rpcBodyOf } from "../../src/middleware/rpc-body.ts";
import { statelessHeaders, statelessMeta } from "../support/stateless-request.ts";

const NAME = "alpha_echo";

function request(
  change: { params?: Record<string, unknown>; meta?: Record<string, unknown>; headers?: Record<string, string> } = {},
  id: unknown = 7,
) {
  const message = {
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: {
      name: NAME,
      arguments: { text: "x" },
      _meta: { ...statelessMeta({}, { name: "c", version: "1" }), ...change.meta },
      ...change.params,
    },
  };
  const text = JSON.stringify(message);
  const req = new Request("http://127.0.0.1/mcp", {
    method: "POST",
    headers: { ...statelessHeaders("tools/call", NAME), ...change.headers },
    body: text,
  });
  return plainModernCall(req, rpcBodyOf(text, JSON.parse(text)));
}

test("a plain call is taken, with its id, params and envelope", () => {
  const taken = request({ meta: { "io.modelcontextprotocol/logLevel": "info", progressToken: "p" } });
  expect(taken?.id).toBe(7);
  expect(taken?.params.name).toBe(NAME);
  expect(taken?.envelope["io.modelcontextprotocol/logLevel"]).toBe("info");
  const retry = request({
    meta: statelessMeta({ elicitation: { form: { applyDefaults: true }, url: {} }, roots: { listChanged: true } }),
    params: { inputResponses: { a: { action: "accept", content: { n: 1, tags: ["x"] } } }, requestState: "s" },
  });
  expect(retry?.params.requestState).toBe("s");
  // What clients send most: a bare elicitation (form mode), and capabilities the SDK does not know.
  const capabilities = { sampling: {}, elicitation: {}, roots: { listChanged: true }, tasks: { list: {} } };
  const taken2 = request({ meta: statelessMeta(capabilities) });
  expect(taken2?.envelope["io.modelcontextprotocol/clientCapabilities"]).toEqual(capabilities);
  // OpenTelemetry trace context, which tracing clients put in every request's _meta.
  const trace = {
    traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    tracestate: "vendor=opaque",
    baggage: "user.id=ada",
  };
  expect(request({ meta: trace })?.envelope).toMatchObject(trace);
});

test("headers the SDK checks or decodes leave the call to the SDK", () => {
  const changed: Record<string, string>[] = [
    { "mcp-name": `=?base64?${Buffer.from(NAME).toString("base64")}?=` },
    { "mcp-name": "alpha_other" },
    { "mcp-protocol-version": "2025-11-25" },
    { "mcp-protocol-version": "2099-01-01" },
    { "mcp-method": "tools/list" },
    { accept: "application/json" },
    { "content-type": "text/plain" },
  ];
  for (const headers of changed) expect(request({ headers })).toBeUndefined();
});

test("an envelope the SDK would read differently, or refuse, leaves the call to the SDK", () => {
  for (const meta of [
    { "io.modelcontextprotocol/protocolVersion": "2099-01-01" },
    { "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: 5 } } },
    { "io.modelcontextprotocol/clientCapabilities": { sampling: [] } },
    { "io.modelcontextprotocol/clientCapabilities": { sampling: { odd: {} } } },
    { "io.modelcontextprotocol/clientCapabilities": { experimental: { x: true } } },
    { "io.modelcontextprotocol/clientCapabilities": { roots: { listChanged: "yes" } } },
    { "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: { applyDefaults: 1 } } } },
    { "io.modelcontextprotocol/clientCapabilities": undefined },
    { "io.modelcontextprotocol/clientInfo": { name: "c" } },
    { "io.modelcontextprotocol/logLevel": "verbose" },
    { progressToken: 1.5 },
    { traceparent: { trace: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" } },
    { baggage: 5 },
    { "com.example/extra": 1 },
  ])
    expect(request({ meta })).toBeUndefined();
});

test("params or ids beyond the plain form leave the call to the SDK", () => {
  for (const params of [
    { arguments: [1] },
    { requestState: 5 },
    { inputResponses: { a: { role: "assistant", content: { type: "text", text: "t" }, model: "m" } } },
    { inputResponses: { a: { roots: [] } } },
    { inputResponses: { a: { action: "accept", content: { n: { deep: true } } } } },
    { task: { ttl: 1 } },
  ])
    expect(request({ params })).toBeUndefined();
  expect(request({}, 2 ** 53)).toBeUndefined();
  expect(request({}, null)).toBeUndefined();
});
