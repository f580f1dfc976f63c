/**
 * A workload that speaks only 2026-07-28 and answers a 2025-era session's call with `input_required`
 * forever. The gateway asks the session each round as its own request and retries the call; it must
 * give up after a bounded number of rounds, and say so: before, the SDK's own cap (10) surfaced as
 * "workload 'm' failed to answer (…); its tools, prompts and resources are unavailable", which is
 * untrue (the workload answered every time and its other tools work), while the bridge allows 16.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { createMcpHandler, inputRequired, McpServer } from "@modelcontextprotocol/server";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { createTestGroup, type TestGroup } from "../support/gateway-group.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let calls = 0;
function startAskingServer() {
  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name: "asking", version: "1.0.0" }, { capabilities: { tools: {} } });
      server.registerTool("again", { inputSchema: z.object({}) }, async () => {
        calls++;
        return inputRequired({
          inputRequests: {
            go_on: inputRequired.elicit({
              message: "Go on?",
              requestedSchema: { type: "object", properties: { yes: { type: "boolean" } } },
            }),
          },
        }) as never;
      });
      server.registerTool("plain", { inputSchema: z.object({}) }, async () => ({
        content: [{ type: "text", text: "plain answer" }],
      }));
      return server;
    },
    { legacy: "reject" },
  );
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: (req) => handler.fetch(req) });
  return { url: `http://127.0.0.1:${server.port}/mcp`, stop: () => server.stop(true) };
}

let upstream: ReturnType<typeof startAskingServer>;
let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  upstream = startAskingServer();
  group = await createTestGroup();
  group.run(upstream.url, "asking", "rounds");
  gatewayUrl = (await group.gateway("rounds", "--name-prefix", "when-needed")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await upstream?.stop();
});

test("a workload that never stops asking: 16 rounds, then a call error that leaves the workload available", async () => {
  const client = new Client({ name: "answerer", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  let asked = 0;
  client.setRequestHandler(ElicitRequestSchema, async () => {
    asked++;
    return { action: "accept", content: { yes: true } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(gatewayUrl)));
  try {
    await expect(client.callTool({ name: "again", arguments: {} })).rejects.toThrow(
      "workload 'asking' still asked for input after 16 rounds; the call was given up",
    );
    expect(asked).toBe(16);
    expect(calls).toBe(17);
    expect(await client.callTool({ name: "plain", arguments: {} })).toMatchObject({
      content: [{ type: "text", text: "plain answer" }],
    });
  } finally {
    await client.close();
  }
});
