/**
 * Protocol 2026-07-28 stateless requests through the stdio bridge: a POST without a
 * session (and without initialize) is answered, leaves no session behind, and GET/DELETE
 * answer 405 for such clients.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { startBridge } from "../support/bridge-server.ts";
import { eventually } from "../support/raw-http.ts";
import { statelessHeaders, statelessMeta } from "../support/stateless-request.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let bridged: Awaited<ReturnType<typeof startBridge>>;
beforeAll(async () => {
  bridged = await startBridge();
});
afterAll(() => bridged?.stop());

/** A 2026-07-28 tools/call of test_simple_text, as its body. */
const simpleTextCall = (id: number) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: "test_simple_text", arguments: {}, _meta: statelessMeta() },
  });

test("a stateless tools/call is answered and leaves no session", async () => {
  const before = bridged.bridge.sessionCount;
  const res = await fetch(bridged.url, {
    method: "POST",
    headers: statelessHeaders("tools/call", "test_simple_text"),
    body: simpleTextCall(1),
  });
  expect(res.status).toBe(200);
  expect(res.headers.get("mcp-session-id")).toBeNull();
  const body = (await res.json()) as { id: number; result: { resultType: string; content: { type: string }[] } };
  expect(body.id).toBe(1);
  expect(body.result.content[0]?.type).toBe("text");
  expect(body.result.resultType).toBe("complete");
  // Whatever served the request is gone once the answer is out (a leak keeps the count up, and this fails).
  await eventually(() => bridged.bridge.sessionCount === before, 5_000, "the session count to return to its value");
  expect(bridged.bridge.sessionCount).toBe(before);
});

test("GET and DELETE without a session answer 405 for stateless clients, 400 for others", async () => {
  for (const method of ["GET", "DELETE"]) {
    expect(
      (await fetch(bridged.url, { method, headers: { ...statelessHeaders(), accept: "text/event-stream" } })).status,
    ).toBe(405);
    expect(
      (
        await fetch(bridged.url, {
          method,
          headers: { accept: "text/event-stream", "mcp-protocol-version": "2025-06-18" },
        })
      ).status,
    ).toBe(400);
  }
});

test("a 2026-07-28 _meta under an older MCP-Protocol-Version and no session is a header mismatch, as at the gateway", async () => {
  const res = await fetch(bridged.url, {
    method: "POST",
    headers: { ...statelessHeaders("tools/list"), "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list", params: { _meta: statelessMeta() } }),
  });
  expect(res.status).toBe(400);
  const body = (await res.json()) as { id: number; error: { code: number; message: string } };
  expect(body.id).toBe(7);
  expect(body.error.code).toBe(-32020);
  expect(body.error.message).toContain("MCP-Protocol-Version '2025-11-25' does not match _meta's '2026-07-28'");
  // The same version in both, and no session: an older client that forgot its session.
  const older = await fetch(bridged.url, {
    method: "POST",
    headers: { ...statelessHeaders(), "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 8,
      method: "tools/list",
      params: { _meta: { "io.modelcontextprotocol/protocolVersion": "2025-11-25" } },
    }),
  });
  expect(older.status).toBe(400);
  expect(((await older.json()) as { error: { message: string } }).error.message).toContain("Mcp-Session-Id");
});

test("a request naming 2026-07-28 is served as one whatever Mcp-Session-Id it carries: header checks, no session", async () => {
  const legacy = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  const opened = await fetch(bridged.url, {
    method: "POST",
    headers: legacy,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "dual-era", version: "1" } },
    }),
  });
  const sessionId = opened.headers.get("mcp-session-id") as string;
  await opened.text();
  const inSession = { ...legacy, "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" };
  await fetch(bridged.url, {
    method: "POST",
    headers: inSession,
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  // A live session must not spare a 2026-07-28 request the revision's header checks.
  const lying = await fetch(bridged.url, {
    method: "POST",
    headers: { ...statelessHeaders("tools/list", "other"), "mcp-session-id": sessionId },
    body: simpleTextCall(2),
  });
  expect(lying.status).toBe(400);
  expect(((await lying.json()) as { error: { code: number } }).error.code).toBe(-32020);
  // A stale one is ignored: the request is answered, and no session id comes back.
  const stale = await fetch(bridged.url, {
    method: "POST",
    headers: { ...statelessHeaders("tools/call", "test_simple_text"), "mcp-session-id": "gone" },
    body: simpleTextCall(3),
  });
  expect(stale.status).toBe(200);
  expect(stale.headers.get("mcp-session-id")).toBeNull();
  expect(((await stale.json()) as { result: { resultType: string } }).result.resultType).toBe("complete");
  // GET and DELETE from a 2026-07-28 client are 405 even with a session id; the session itself lives on.
  for (const method of ["GET", "DELETE"]) {
    const refused = await fetch(bridged.url, {
      method,
      headers: { ...statelessHeaders(), accept: "text/event-stream", "mcp-session-id": sessionId },
    });
    expect(refused.status).toBe(405);
  }
  const stillThere = await fetch(bridged.url, {
    method: "POST",
    headers: inSession,
    body: JSON.stringify({ jsonrpc: "2.0", id: 4, method: "ping" }),
  });
  expect(stillThere.status).toBe(200);
});

test("a listen from a client that accepts no stream is refused with 406, naming the request it answers", async () => {
  const res = await fetch(bridged.url, {
    method: "POST",
    headers: { ...statelessHeaders("subscriptions/listen"), accept: "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: "listen-1",
      method: "subscriptions/listen",
      params: { notifications: { toolsListChanged: true }, _meta: statelessMeta() },
    }),
  });
  expect(res.status).toBe(406);
  expect(await res.json()).toMatchObject({ id: "listen-1", error: { code: -32000 } });
});
