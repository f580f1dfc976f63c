/**
 * A member's 404 is sent again on a new session only when it can mean "that session is forgotten":
 * the request went on a member session. A member without sessions (a stateless 2025-era server) that
 * answers 404 did not forget anything; it may have handled the request (a server that words "no such
 * resource" as HTTP 404, after its handler ran), and sending it again would run a tools/call twice.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createTestGroup, type TestGroup } from "../support/gateway-group.ts";

// Real processes: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let group: TestGroup;
let gatewayUrl: string;
let server: ReturnType<typeof Bun.serve>;
/** How many times the member's handlers ran, by method. */
const handled = new Map<string, number>();

type Message = { id?: number | string; method?: string; params?: { protocolVersion?: string } };

/** A stateless 2025-era member: no Mcp-Session-Id; its resources/read and tools/call run, then answer 404. */
function member(): ReturnType<typeof Bun.serve> {
  const json = (body: unknown, status = 200) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  return Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      if (req.method !== "POST") return new Response(null, { status: 405 });
      const message = (await req.json()) as Message;
      const { id, method } = message;
      if (id === undefined) return new Response(null, { status: 202 });
      const answer = (result: unknown) => json({ jsonrpc: "2.0", id, result });
      switch (method) {
        case "initialize":
          return answer({
            protocolVersion: message.params?.protocolVersion ?? "2025-06-18",
            capabilities: { tools: {}, resources: {} },
            serverInfo: { name: "stateless-404", version: "1.0.0" },
          });
        case "tools/list":
          return answer({ tools: [{ name: "charge", inputSchema: { type: "object" } }] });
        case "resources/list":
          return answer({ resources: [{ uri: "note://gone", name: "gone" }] });
        case "prompts/list":
          return answer({ prompts: [] });
        case "resources/read":
        case "tools/call":
          handled.set(method, (handled.get(method) ?? 0) + 1);
          return json({ jsonrpc: "2.0", id, error: { code: -32002, message: "not found" } }, 404);
        default:
          return json({ jsonrpc: "2.0", id, error: { code: -32601, message: "Method not found" } });
      }
    },
  });
}

beforeAll(async () => {
  server = member();
  group = await createTestGroup();
  group.run(`http://127.0.0.1:${server.port}/mcp`, "stateless", "no-sessions");
  gatewayUrl = (await group.gateway("no-sessions")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await server?.stop(true);
});

test("a 404 from a member without sessions is its answer: the request is not sent again", async () => {
  const client = new Client({ name: "stateless-404-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(gatewayUrl)));
  try {
    // resources/read goes through the SDK path, tools/call through the relay (pass-through.ts).
    await expect(client.readResource({ uri: "note://gone" })).rejects.toThrow(/failed to answer/);
    expect(handled.get("resources/read")).toBe(1);
    const called = await client.callTool({ name: "stateless_charge", arguments: {} }).catch((err: unknown) => err);
    expect(String((called as { message?: string }).message ?? JSON.stringify(called))).toContain("failed to answer");
    expect(handled.get("tools/call")).toBe(1);
  } finally {
    await client.close();
  }
});
