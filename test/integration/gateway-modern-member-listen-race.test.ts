/**
 * The gateway lists a 2026-07-28-only workload when it joins and opens its `subscriptions/listen`
 * afterwards: a change between the two is announced to no stream (that revision sends list changes
 * only on listens), so the gateway must list again once the listen is acknowledged, or it keeps
 * the stale list until some later change. Here the workload's tool list grows right after the
 * gateway's first `tools/list`, and announces nothing. Before, the new tool never appeared.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { z } from "zod";
import { createTestGroup, type TestGroup, until } from "../support/gateway-group.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

/** A 2026-07-28-only server whose second tool appears, unannounced, once its tools were first listed. */
function startGrowingServer() {
  let grown = false;
  const handler = createMcpHandler(
    () => {
      const server = new McpServer(
        { name: "growing", version: "1.0.0" },
        { capabilities: { tools: { listChanged: true } } },
      );
      const answer = async () => ({ content: [{ type: "text" as const, text: "ok" }] });
      server.registerTool("first", { inputSchema: z.object({}) }, answer);
      if (grown) server.registerTool("second", { inputSchema: z.object({}) }, answer);
      return server;
    },
    { legacy: "reject" },
  );
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const listing = req.headers.get("mcp-method") === "tools/list";
      const response = await handler.fetch(req);
      if (listing) grown = true;
      return response;
    },
  });
  return { url: `http://127.0.0.1:${server.port}/mcp`, stop: () => server.stop(true) };
}

let upstream: ReturnType<typeof startGrowingServer>;
let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  upstream = startGrowingServer();
  group = await createTestGroup();
  group.run(upstream.url, "growing", "race");
  gatewayUrl = (await group.gateway("race", "--name-prefix", "when-needed")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await upstream?.stop();
});

test("a change between the workload's first listing and its listen's acknowledgement is not missed", async () => {
  const client = new Client({ name: "lister", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(gatewayUrl)));
  try {
    const names = async () => (await client.listTools()).tools.map((tool) => tool.name).toSorted();
    expect(await until(async () => (await names()).includes("second"), 10_000)).toBe(true);
    expect(await names()).toEqual(["first", "second"]);
  } finally {
    await client.close();
  }
});
