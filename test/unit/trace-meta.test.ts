import { expect, test } from "bun:test";
import { readRpcBody } from "../../src/middleware/rpc-body.ts";
import { traceMetaOf, withTraceMeta } from "../../src/middleware/trace-meta.ts";
import type { JsonRpcMessage } from "../../src/proxy/mcp-message.ts";

const PROXY = "00-0af7651916cd43dd8448eb211c80319c-1111111111111111-01";
const inject = (carrier: Record<string, unknown>, setter: { set(c: never, k: string, v: string): void }) =>
  setter.set(carrier as never, "traceparent", PROXY);
const bodyOf = (text: string) => readRpcBody(new Request("http://x/mcp", { method: "POST", body: text }));

test("traceMetaOf: only a _meta object with a traceparent string", () => {
  const call = (params: unknown) => ({ jsonrpc: "2.0", id: 1, method: "tools/call", params }) as JsonRpcMessage;
  expect(traceMetaOf(call({ _meta: { traceparent: "x" } }))).toEqual({ traceparent: "x" });
  expect(traceMetaOf(call({ _meta: { traceparent: 7 } }))).toBeUndefined();
  expect(traceMetaOf(call({ _meta: ["traceparent"] }))).toBeUndefined();
  expect(traceMetaOf(call({}))).toBeUndefined();
  expect(traceMetaOf(call("params"))).toBeUndefined();
  expect(traceMetaOf(undefined)).toBeUndefined();
});

test("withTraceMeta rewrites only the traced message's _meta, keeps the rest and big integers exact", async () => {
  const text = `[ {"jsonrpc":"2.0","id":12345678901234567890,"method":"tools/call","params":{"name":"a","arguments":{"n":1},"_meta":{"traceparent":"00-x","tracestate":"a=b","k":"v"}}},
    {"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"traceparent":"untouched"}}} ]`;
  const body = (await bodyOf(text)) as NonNullable<Awaited<ReturnType<typeof bodyOf>>>;
  const message = body.messages[0] as JsonRpcMessage;
  const rewritten = withTraceMeta(body, message, traceMetaOf(message) as Record<string, unknown>, inject);
  expect(rewritten?.text).toBe(
    `[{"jsonrpc":"2.0","id":12345678901234567890,"method":"tools/call","params":{"name":"a","arguments":{"n":1},"_meta":{"traceparent":"${PROXY}","k":"v"}}},{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"traceparent":"untouched"}}}]`,
  );
});

test("withTraceMeta leaves a body that repeats a key as it is (the message checks refuse it)", async () => {
  const text = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b","_meta":{"traceparent":"00-x"}}}`;
  const body = (await bodyOf(text)) as NonNullable<Awaited<ReturnType<typeof bodyOf>>>;
  const message = body.messages[0] as JsonRpcMessage;
  expect(withTraceMeta(body, message, traceMetaOf(message) as Record<string, unknown>, inject)).toBeUndefined();
});
