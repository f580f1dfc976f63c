/**
 * A 2026-07-28 `subscriptions/listen` stream never ends by itself, so when mcpmgr stops it is
 * mcpmgr that ends the subscription: the revision asks for a graceful end (the listen request
 * answered with a complete result naming the subscription, then the stream closed), and there is
 * nothing to wait for. Checked in each mode that relays or serves such a stream: the transparent
 * proxy in front of a 2026-07-28 server, and the stdio bridge in front of a 2026-07-28 and a
 * 2025-11-25 stdio server, and the gateway. Before, the proxy and the bridge waited their whole
 * 10 s bound for these streams, and the proxy and the bridge of a 2026-07-28 server then ended
 * them with a JSON-RPC error (the gateway always ended them gracefully at once).
 */
import { afterEach, expect, test, setDefaultTimeout } from "bun:test";
import {
  CONFORMANCE_FIXTURE,
  CONFORMANCE_FIXTURE_2026,
  runStdioFixture,
  startConformanceServer,
} from "../support/conformance.ts";
import { createTestGroup } from "../support/gateway-group.ts";
import { startProxy } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.allSettled(cleanups.splice(0).map((cleanup) => cleanup()));
});

const V = "2026-07-28";
const meta = { "io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {} };

/** The SSE events of a stream, as parsed JSON-RPC messages. */
function messagesOf(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
}

/** Opens a listen on `url`, stops mcpmgr with `stop` once it is acknowledged; what the stream said, and when it ended. */
async function listenThroughStop(url: string, stop: () => Promise<unknown>) {
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": V,
      "mcp-method": "subscriptions/listen",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: "sub-1",
      method: "subscriptions/listen",
      params: { notifications: { toolsListChanged: true }, _meta: meta },
    }),
  });
  expect(res.status).toBe(200);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes("notifications/subscriptions/acknowledged")) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`the listen stream ended before its acknowledgment:\n${text}`);
    text += decoder.decode(value, { stream: true });
  }
  const stopped = performance.now();
  const stopping = stop();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  const endedMs = performance.now() - stopped;
  await stopping;
  return { messages: messagesOf(text), endedMs };
}

function expectGracefulEnd(outcome: { messages: Record<string, unknown>[]; endedMs: number }): void {
  const last = outcome.messages.at(-1) as { result?: { _meta?: Record<string, unknown> } };
  // The gateway also names itself (serverInfo) in the result's _meta, as in all its results.
  expect(last).toMatchObject({
    jsonrpc: "2.0",
    id: "sub-1",
    result: { resultType: "complete", _meta: { "io.modelcontextprotocol/subscriptionId": "sub-1" } },
  });
  expect(Object.keys(last.result ?? {}).toSorted()).toEqual(["_meta", "resultType"]);
  expect(outcome.messages.some((message) => "error" in message)).toBe(false);
  // At once, not after the graceful-stop bound (10 s) that requests under way get.
  expect(outcome.endedMs).toBeLessThan(8_000);
}

test("mcpmgr proxy in front of a 2026-07-28 server: SIGTERM ends a listen gracefully, at once", async () => {
  const fixture = await startConformanceServer({ fixture: CONFORMANCE_FIXTURE_2026 });
  cleanups.push(() => fixture.stop());
  const proxy = await startProxy(fixture.url);
  cleanups.push(() => proxy.stop());
  expectGracefulEnd(await listenThroughStop(proxy.url, () => proxy.stop()));
});

for (const [revision, fixture] of [
  ["2026-07-28", CONFORMANCE_FIXTURE_2026],
  ["2025-11-25", CONFORMANCE_FIXTURE],
] as const) {
  test(`the stdio bridge of a ${revision} server: stopping the run ends a listen gracefully, at once`, async () => {
    const run = await runStdioFixture(fixture);
    cleanups.push(() => run.stop());
    expectGracefulEnd(await listenThroughStop(run.url, () => run.stop()));
  });
}

test("the gateway: SIGTERM ends a listen gracefully, at once", async () => {
  const group = await createTestGroup();
  cleanups.push(() => group.cleanup());
  group.run(await group.packageOf(CONFORMANCE_FIXTURE_2026), "conf26", "listeners", "stdio");
  const gateway = await group.gateway("listeners");
  expectGracefulEnd(await listenThroughStop(gateway.url, () => gateway.stop()));
});
