/**
 * A 2025-era client session subscribes to a resource of a workload that speaks only 2026-07-28.
 * That revision has no resources/subscribe: a client follows a resource with a
 * `subscriptions/listen` stream naming its URI. The gateway (which offers subscriptions to its
 * sessions) holds that stream for the session, so the session's subscribe succeeds and the
 * workload's `notifications/resources/updated` reach it; after unsubscribing, none do. Before, the
 * subscribe failed with -32603 ("… is not supported by the negotiated protocol version").
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { createTestGroup, type TestGroup, until } from "../support/gateway-group.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const URI = "test://doc";

/** A 2026-07-28-only server (SDK v2) with one resource it can announce updates of; counts open listens. */
function startResourceServer() {
  const handler = createMcpHandler(
    () => {
      const server = new McpServer(
        { name: "resource-server", version: "1.0.0" },
        { capabilities: { resources: { subscribe: true, listChanged: true } } },
      );
      server.registerResource("doc", URI, { description: "a document" }, async () => ({
        contents: [{ uri: URI, text: "hello" }],
      }));
      return server;
    },
    { legacy: "reject" },
  );
  let listens = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const listen = req.headers.get("mcp-method") === "subscriptions/listen";
      const body = listen ? await req.clone().text() : "";
      if (listen && body.includes(URI)) {
        listens++;
        req.signal.addEventListener("abort", () => listens--);
      }
      return handler.fetch(req);
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/mcp`,
    updated: () => handler.notify.resourceUpdated(URI),
    openListens: () => listens,
    stop: () => server.stop(true),
  };
}

let upstream: ReturnType<typeof startResourceServer>;
let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  upstream = startResourceServer();
  group = await createTestGroup();
  group.run(upstream.url, "docs", "subscriptions");
  gatewayUrl = (await group.gateway("subscriptions")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await upstream?.stop();
});

test("a 2025-era session subscribes to a 2026-07-28-only workload's resource, gets its updates, and unsubscribes", async () => {
  const client = new Client({ name: "subscriber", version: "1.0.0" });
  const updates: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
    updates.push(notification.params.uri);
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(gatewayUrl)));
  try {
    expect(await client.subscribeResource({ uri: URI })).toEqual({});
    expect(upstream.openListens()).toBe(1);
    upstream.updated();
    expect(await until(() => updates.length > 0, 10_000)).toBe(true);
    expect(updates).toEqual([URI]);
    expect(await client.unsubscribeResource({ uri: URI })).toEqual({});
    expect(await until(() => upstream.openListens() === 0, 10_000)).toBe(true);
    upstream.updated();
    await Bun.sleep(300);
    expect(updates).toEqual([URI]);
  } finally {
    await client.close();
  }
});
