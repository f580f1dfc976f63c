/**
 * Which 2026-07-28 tools/call the gateway's fast lane takes (src/gateway/modern-pass-through.ts
 * `plainModernCall`): the form whose every part the SDK would read as it is, or would pass on as it is
 * (a client's own `_meta` keys, `inputResponses`) or drop (params the revision does not define).
 * Anything else must be left to the SDK, which serves it or refuses it as the revision says.
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

test("a client's own _meta keys, any inputResponses and params the revision does not define are taken", () => {
  // Keys the SDK passes on as written, whatever their values: a vendor's, one under a reserved prefix
  // the revision does not define, trace context in a form the SDK does not read.
  const own = {
    "com.example.client/toolUseId": "toolu_01",
    "com.example/context": { nested: [1, { a: null }] },
    "io.modelcontextprotocol/notYetDefined": 1,
    traceparent: { trace: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" },
    baggage: 5,
  };
  expect(request({ meta: own })?.envelope).toMatchObject(own);
  // Answers of every kind (sampling, roots, and ones only the member can judge), passed on as written.
  for (const inputResponses of [
    { a: { role: "assistant", content: { type: "text", text: "t" }, model: "m" } },
    { a: { roots: [{ uri: "file:///work" }] } },
    { a: { action: "accept", content: { n: { deep: true } } } },
    { a: 5 },
    null,
  ])
    expect(request({ params: { inputResponses } })?.params.inputResponses).toEqual(inputResponses);
  // task (an extension's in 2026-07-28) and a vendor's param: the SDK drops them, and so does the lane.
  expect(request({ params: { task: { ttl: 1 }, "com.example/hint": true } })?.params.name).toBe(NAME);
});

test("Mcp-Name in its Base64 form is taken when it decodes to the tool's name", () => {
  const encoded = Buffer.from(NAME).toString("base64");
  expect(request({ headers: { "mcp-name": `=?base64?${encoded}?=` } })?.params.name).toBe(NAME);
  for (const header of [
    `=?base64?${encoded.replace(/=+$/, "")}?=`, // not canonical (no padding)
    `=?base64? ${encoded}?=`,
    "=?base64?/w==?=", // not UTF-8
    `=?BASE64?${encoded}?=`, // the markers are lowercase: a plain value, not the name
    `=?base64?${Buffer.from("alpha_other").toString("base64")}?=`,
  ])
    expect(request({ headers: { "mcp-name": header } })).toBeUndefined();
});

test("headers the SDK checks or decodes leave the call to the SDK", () => {
  const changed: Record<string, string>[] = [
    { "mcp-name": "alpha_other" },
    { "mcp-protocol-version": "2025-11-25" },
    { "mcp-protocol-version": "2099-01-01" },
    { "mcp-method": "tools/list" },
    // The SDK takes off spaces and tabs only (as Headers does): a no-break space is a different value.
    { "mcp-method": "tools/call\u00a0" },
    { "mcp-protocol-version": "2026-07-28\u00a0" },
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
  ])
    expect(request({ meta })).toBeUndefined();
  // An own __proto__ key, which the SDK's parse drops from _meta (and the lane would pass on).
  const proto = JSON.parse(`{"__proto__":{"x":1},${JSON.stringify(statelessMeta({})).slice(1)}`);
  expect(request({ meta: proto })).toBeUndefined();
});

test("params or ids beyond the plain form leave the call to the SDK", () => {
  for (const params of [
    { arguments: [1] },
    { arguments: null },
    { arguments: JSON.parse('{"__proto__":{"x":1},"text":"x"}') },
    { requestState: 5 },
    { requestState: null },
  ])
    expect(request({ params })).toBeUndefined();
  expect(request({}, 2 ** 53)).toBeUndefined();
  expect(request({}, null)).toBeUndefined();
});
