/**
 * `mcpmgr proxy stdio` between a stdio client and remotes of both eras: the TypeScript SDK v2
 * client (version negotiation "auto") reaches an MCP server that speaks only 2026-07-28 —
 * stateless POSTs with the revision's headers, x-mcp-header mirrored, cancellation by
 * closing the request — and negotiates down to 2025-11-25 with our 2025-era fixture server.
 * A 2025-era client against a 2026-only remote is served by translation
 * (proxy-stdio-legacy-client.test.ts); against a remote that refuses initialize and is no
 * 2026-07-28 server either, it gets an error, not a hang.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as LegacyStdio } from "@modelcontextprotocol/sdk/client/stdio.js";
import { type ModernServer, startModernServer } from "../fixtures/modern-server.ts";
import { type RunningFixture, startConformanceServer } from "../support/conformance.ts";
import { CLI_ENTRY } from "../support/processes.ts";
import { eventually } from "../support/raw-http.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

/** Probes the version on the real process (the SDK's base class would spawn a throw-away sibling). */
class ProxyStdio extends StdioClientTransport {}

let modern: ModernServer;
let legacy: RunningFixture;
beforeAll(async () => {
  modern = startModernServer();
  legacy = await startConformanceServer();
});
afterAll(async () => {
  modern.stop();
  await legacy.stop();
});

async function connect(url: string): Promise<Client> {
  const client = new Client({ name: "stdio-2026-test", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  await client.connect(
    new ProxyStdio({ command: process.execPath, args: [CLI_ENTRY, "proxy", "stdio", url], stderr: "ignore" }),
  );
  return client;
}

test("a 2026-07-28 remote: stateless requests with the revision's headers, x-mcp-header mirrored", async () => {
  modern.seen.length = 0;
  const client = await connect(modern.url);
  try {
    expect(client.getProtocolEra()).toBe("modern");
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["slow", "where"]);
    const result = await client.callTool({ name: "where", arguments: { region: "eu west" } });
    expect(result.content).toEqual([{ type: "text", text: "in eu west" }]);
  } finally {
    await client.close();
  }
  expect(modern.seen.length).toBeGreaterThanOrEqual(3);
  for (const request of modern.seen) {
    expect(request.method).toBe("POST");
    expect(request.protocolVersion).toBe("2026-07-28");
    expect(request.mcpMethod).not.toBeNull();
    expect(request.sessionId).toBeNull();
  }
  expect(modern.seen.find((r) => r.mcpMethod === "tools/call")).toMatchObject({ mcpName: "where", region: "eu west" });
});

test("a tool called before any tools/list (a list kept from an earlier run): its headers are looked up first", async () => {
  modern.seen.length = 0;
  const client = await connect(modern.url);
  try {
    const result = await client.callTool({ name: "where", arguments: { region: "ap south" } });
    expect(result.content).toEqual([{ type: "text", text: "in ap south" }]);
  } finally {
    await client.close();
  }
  const calls = modern.seen.filter((r) => r.mcpMethod === "tools/list" || r.mcpMethod === "tools/call");
  expect(calls.map((r) => r.mcpMethod)).toEqual(["tools/list", "tools/call"]);
  expect(calls[1]).toMatchObject({ mcpName: "where", region: "ap south" });
});

test("a 2026-07-28 request cancelled by the client closes its HTTP request", async () => {
  modern.cancelled.length = 0;
  const client = await connect(modern.url);
  try {
    const controller = new AbortController();
    const call = client.callTool({ name: "slow", arguments: {} }, { signal: controller.signal });
    await eventually(() => modern.seen.some((r) => r.mcpName === "slow"), 20_000, "the call to reach the remote");
    controller.abort();
    await expect(call).rejects.toThrow();
    await eventually(() => modern.cancelled.length > 0, 20_000, "the remote to see its request closed");
    expect(modern.cancelled).toEqual(["slow"]);
  } finally {
    await client.close();
  }
});

test("a 2025-era remote: the client's server/discover probe fails and it falls back to initialize", async () => {
  const client = await connect(legacy.url);
  try {
    expect(client.getProtocolEra()).toBe("legacy");
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain("test_simple_text");
    const result = await client.callTool({ name: "test_simple_text", arguments: {} });
    expect(JSON.stringify(result.content)).toContain("text");
  } finally {
    await client.close();
  }
});

/** A remote that refuses every request with `status`; records the method of each. */
function refusingRemote(status: number) {
  const asked: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      asked.push(req.headers.get("mcp-method") ?? ((await req.json()) as { method: string }).method);
      return Response.json({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "not today" } }, { status });
    },
  });
  return { url: `http://127.0.0.1:${server.port}/mcp`, asked, stop: () => server.stop(true) };
}

function legacyConnect(url: string): Promise<void> {
  const client = new LegacyClient({ name: "legacy-client", version: "1.0.0" });
  const transport = new LegacyStdio({
    command: process.execPath,
    args: [CLI_ENTRY, "proxy", "stdio", url],
    stderr: "ignore",
  });
  return client.connect(transport).finally(() => client.close().catch(() => {}));
}

test("a 2025-era client and a remote that refuses initialize and server/discover alike: a clear error, not a hang", async () => {
  const remote = refusingRemote(400);
  try {
    await expect(legacyConnect(remote.url)).rejects.toThrow(/mcpmgr could not reach the remote MCP server.*not today/);
    // The initialize, then the probe that found no 2026-07-28 server behind it.
    expect(remote.asked).toEqual(["initialize", "server/discover"]);
  } finally {
    remote.stop();
  }
});

test("an initialize refused for want of credentials is a question of authentication: no era probe", async () => {
  const remote = refusingRemote(401);
  try {
    // Reached, and refused: said so, not "could not reach" (a member behind a gateway with policies answers 403 alike).
    await expect(legacyConnect(remote.url)).rejects.toThrow(/the remote MCP server refused the request \(HTTP 401\)/);
    expect(remote.asked).toEqual(["initialize"]);
  } finally {
    remote.stop();
  }
});
