/**
 * The gateway reaches its workloads over Streamable HTTP, and MCP 2026-07-28 says a client of
 * that transport must reject a tool whose `x-mcp-header` declarations break the revision's rules
 * (here: one on a `number` argument, which no header may carry): left out of its `tools/list`,
 * with a warning naming the tool and why. A 2026-07-28 workload refuses every call to such a tool
 * that carries a value for the argument (-32020: no `Mcp-Param-N` header can be built for it), so a
 * 2025-era client of the gateway that saw it listed could only fail calling it; a 2026-07-28
 * client would leave it out itself. Both see the valid tools as before.
 *
 * And a call from a 2025-era session to such a member carries the Mcp-Param headers of the tool's
 * valid declarations, as a 2026-07-28 caller's does: the member refuses a call without them.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { createMcpHandler, fromJsonSchema, McpServer } from "@modelcontextprotocol/server";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createTestGroup, type TestGroup } from "../support/gateway-group.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

/** A 2026-07-28-only server (SDK v2) with one tool whose declaration is invalid and one whose is valid. */
function startDeclaringServer() {
  /** The Mcp-Param-Region header of each tools/call it received (null: none). */
  const regions: (string | null)[] = [];
  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name: "declaring", version: "1.0.0" });
      const tool = (name: string, property: Record<string, unknown>) =>
        server.registerTool(
          name,
          { description: name, inputSchema: fromJsonSchema({ type: "object", properties: { value: property } }) },
          async () => ({ content: [{ type: "text", text: `${name} ran` }] }),
        );
      tool("by_number", { type: "number", "x-mcp-header": "N" });
      tool("by_region", { type: "string", "x-mcp-header": "Region" });
      return server;
    },
    { legacy: "reject" },
  );
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch(req) {
      if (req.headers.get("mcp-method") === "tools/call") regions.push(req.headers.get("mcp-param-region"));
      return handler.fetch(req);
    },
  });
  return { url: `http://127.0.0.1:${server.port}/mcp`, regions, stop: () => server.stop(true) };
}

let upstream: ReturnType<typeof startDeclaringServer>;
let group: TestGroup;
let gateway: Awaited<ReturnType<TestGroup["gateway"]>>;

beforeAll(async () => {
  upstream = startDeclaringServer();
  group = await createTestGroup();
  group.run(upstream.url, "decl", "declarations");
  gateway = await group.gateway("declarations");
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await upstream?.stop();
});

test("a tool with an invalid x-mcp-header is left out for 2025-era clients, with a warning", async () => {
  const client = new Client({ name: "declarations-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  try {
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["decl_by_region"]);
  } finally {
    await client.close();
  }
  expect(gateway.output()).toContain(`decl's tool "by_number" has an invalid x-mcp-header`);
});

test("a 2025-era session's call reaches a 2026-07-28 member with the tool's Mcp-Param headers, and works", async () => {
  const client = new Client({ name: "declarations-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  try {
    // The session's first call: no tools/list of its own taught its upstream connection the declarations.
    const result = await client.callTool({ name: "decl_by_region", arguments: { value: "eu-west" } });
    expect(result.content).toEqual([{ type: "text", text: "by_region ran" }]);
    expect(upstream.regions.at(-1)).toBe("eu-west");
  } finally {
    await client.close();
  }
});

test("2026-07-28 clients do not get it listed either", async () => {
  const meta = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
  };
  const res = await fetch(gateway.url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/list",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: meta } }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { result: { tools: { name: string }[] } };
  expect(body.result.tools.map((tool) => tool.name)).toEqual(["decl_by_region"]);
});
