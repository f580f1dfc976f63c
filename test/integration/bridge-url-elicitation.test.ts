/**
 * URL-mode elicitation across the eras at the stdio bridge (test/fixtures/url-elicitation-server.ts):
 * 2025-11-25 says it with an `elicitationId` (a request to the client, or the -32042 error), 2026-07-28
 * without one, inside an InputRequiredResult. Each client must get the shape of its own revision.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { startBridge } from "../support/bridge-server.ts";
import { statelessHeaders, statelessMeta } from "../support/stateless-request.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

const FIXTURE = join(import.meta.dir, "../fixtures/url-elicitation-server.ts");
const CONNECT_URL = "https://accounts.example.com/connect?session=42";

let modern: Awaited<ReturnType<typeof startBridge>>;
let legacy: Awaited<ReturnType<typeof startBridge>>;
beforeAll(async () => {
  [modern, legacy] = await Promise.all([
    startBridge({ cmd: [process.execPath, FIXTURE, "modern"] }),
    startBridge({ cmd: [process.execPath, FIXTURE, "legacy"] }),
  ]);
});
afterAll(async () => {
  await Promise.allSettled([modern?.stop(), legacy?.stop()]);
});

/** A 2026-07-28 tools/call of connect_account, with the capabilities and answers given. */
async function modernCall(url: string, id: number, capabilities: Record<string, unknown>, inputResponses?: unknown) {
  const response = await fetch(url, {
    method: "POST",
    headers: statelessHeaders("tools/call", "connect_account"),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: {
        name: "connect_account",
        arguments: {},
        ...(inputResponses ? { inputResponses } : {}),
        _meta: statelessMeta(capabilities),
      },
    }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

test("a 2026-07-28 server's URL elicitation reaches a 2025-11-25 session with the elicitationId that revision requires", async () => {
  const asked: Record<string, unknown>[] = [];
  const client = new Client(
    { name: "url-session", version: "1.0.0" },
    { capabilities: { elicitation: { form: {}, url: {} } } },
  );
  // The SDK validates the request against 2025-11-25's schema before this handler sees it.
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params as Record<string, unknown>);
    return { action: "accept" };
  });
  const transport = new StreamableHTTPClientTransport(new URL(modern.url));
  await client.connect(transport);
  try {
    expect(transport.protocolVersion).toBe("2025-11-25");
    const result = await client.callTool({ name: "connect_account", arguments: {} });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: "text", text: "connected (accept)" }]);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ mode: "url", url: CONNECT_URL, message: "Sign in to connect" });
    expect(asked[0]?.elicitationId).toBeString();
  } finally {
    await client.close();
  }
});

test("a 2025-11-25 server's -32042 reaches a 2026-07-28 client as an input round it can answer, never as -32042", async () => {
  const first = await modernCall(legacy.url, 1, { elicitation: { url: {} } });
  expect(first.status).toBe(200);
  expect(first.body.error).toBeUndefined();
  expect(first.body.result.resultType).toBe("input_required");
  const requests = Object.values(first.body.result.inputRequests as Record<string, { method: string; params: any }>);
  expect(requests).toHaveLength(1);
  expect(requests[0]).toEqual({
    method: "elicitation/create",
    params: { mode: "url", message: "Sign in to connect", url: CONNECT_URL },
  });
  // The user visited the page; the retry (a new id, the answers under the same keys) completes the call.
  const key = Object.keys(first.body.result.inputRequests)[0] as string;
  const second = await modernCall(legacy.url, 2, { elicitation: { url: {} } }, { [key]: { action: "accept" } });
  expect(second.status).toBe(200);
  expect(second.body.result).toMatchObject({ resultType: "complete", content: [{ text: "connected (call 2)" }] });
});

test("a 2026-07-28 client that cannot open URLs gets -32021 naming elicitation.url, not -32042", async () => {
  const refused = await modernCall(legacy.url, 3, { elicitation: { form: {} } });
  expect(refused.status).toBe(400);
  expect(refused.body.error).toMatchObject({
    code: -32021,
    data: { requiredCapabilities: { elicitation: { url: {} } } },
  });
});
