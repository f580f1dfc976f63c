/**
 * The gateway's endpoint against odd clients: its front end (an empty group) served by the real
 * listener (proxy/serve.ts) with a short idle timeout, talked to over raw sockets and fetch.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { GroupCatalog } from "../../src/gateway/catalog.ts";
import { gatewayFrontEnd } from "../../src/gateway/front-end.ts";
import { type RunningServer, serve } from "../../src/proxy/serve.ts";
import { until } from "../support/gateway-group.ts";
import { statelessHeaders, statelessMeta } from "../support/stateless-request.ts";

// Real sockets and the idle timeout: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let server: RunningServer;
let frontEnd: ReturnType<typeof gatewayFrontEnd>;
let catalog: GroupCatalog;

beforeAll(() => {
  catalog = new GroupCatalog({ prefixMode: "always", timeoutMs: 5_000, log: () => {}, onChange: () => {} });
  frontEnd = gatewayFrontEnd({ group: "odd", catalog, timeoutMs: 5_000, sessionIdleMs: 60_000 });
  server = serve({ host: "127.0.0.1", port: 0, handler: frontEnd.handler, idleTimeoutSeconds: 1 });
});

afterAll(async () => {
  await frontEnd?.close();
  await catalog?.close();
  await server?.shutdown(1_000);
});

const initialize = (capabilities: Record<string, unknown> = {}, protocolVersion = "2025-06-18") =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion, capabilities, clientInfo: { name: "odd", version: "1" } },
  });

/** Sends a POST's head and the start of its body, then nothing; resolves whether the server closed it. */
async function stalledPost(extraHeaders = ""): Promise<{ socket: Socket; closed: () => boolean }> {
  let closed = false;
  const socket = connect(server.port, "127.0.0.1");
  socket.on("close", () => {
    closed = true;
  });
  socket.on("error", () => {});
  await new Promise<void>((resolve) => socket.once("connect", resolve));
  socket.write(
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Type: application/json\r\n` +
      `Accept: application/json, text/event-stream\r\n${extraHeaders}Content-Length: 500\r\n\r\n{"jsonrpc":`,
  );
  return { socket, closed: () => closed };
}

test("a client that stops sending mid-body is cut off by the idle timeout, as at every other endpoint", async () => {
  const stalled = await stalledPost();
  try {
    expect(await until(stalled.closed, 10_000)).toBe(true);
  } finally {
    stalled.socket.destroy();
  }
});

test("the same within a session", async () => {
  const opened = await fetch(`${server.url.origin}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: initialize(),
  });
  const sessionId = opened.headers.get("mcp-session-id");
  await opened.body?.cancel();
  expect(sessionId).toBeString();
  const stalled = await stalledPost(`Mcp-Session-Id: ${sessionId}\r\n`);
  try {
    expect(await until(stalled.closed, 10_000)).toBe(true);
  } finally {
    stalled.socket.destroy();
  }
});

test("a body past the MCP SDK's own 4 MiB default (within MCPMGR_MAX_REQUEST_BYTES) is served", async () => {
  const padding = "a".repeat(5 * 1024 * 1024);
  const response = await fetch(`${server.url.origin}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: initialize({ experimental: { padding: { text: padding } } }),
  });
  const text = await response.text();
  expect(response.status).toBe(200);
  expect(text).toContain('"serverInfo"');
});

const META = statelessMeta({}, { name: "odd", version: "1" });

test("a 2026-07-28 listen asking for resource updates is not told they will come (they cannot reach it)", async () => {
  const abort = new AbortController();
  const response = await fetch(`${server.url.origin}/mcp`, {
    method: "POST",
    signal: abort.signal,
    headers: statelessHeaders("subscriptions/listen"),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: "listen",
      method: "subscriptions/listen",
      params: { notifications: { resourceSubscriptions: ["notes://a"], toolsListChanged: true }, _meta: META },
    }),
  });
  expect(response.status).toBe(200);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  let text = "";
  while (!text.includes("\n\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  abort.abort();
  const data = text.split("\n").find((line) => line.startsWith("data:")) ?? "";
  const ack = JSON.parse(data.slice(5)) as { method: string; params: { notifications: Record<string, unknown> } };
  expect(ack.method).toBe("notifications/subscriptions/acknowledged");
  expect(ack.params.notifications).toEqual({ toolsListChanged: true });
});

test("a 2025-era session is still offered resource subscriptions (its workloads' updates reach it)", async () => {
  const response = await fetch(`${server.url.origin}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: initialize(),
  });
  const text = await response.text();
  expect(text).toContain('"resources":{"listChanged":true,"subscribe":true}');
});

test("a batch is refused in a 2025-06-18 session, as the bridge refuses it; 2025-03-26 may batch; [] never", async () => {
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  const sessions = new Map<string, string>();
  for (const version of ["2025-06-18", "2025-03-26"]) {
    const opened = await fetch(`${server.url.origin}/mcp`, { method: "POST", headers, body: initialize({}, version) });
    sessions.set(version, opened.headers.get("mcp-session-id") as string);
    await opened.text();
  }
  const post = (body: string, version: string) =>
    fetch(`${server.url.origin}/mcp`, {
      method: "POST",
      headers: { ...headers, "mcp-session-id": sessions.get(version) as string, "mcp-protocol-version": version },
      body,
    });
  const pings = JSON.stringify([
    { jsonrpc: "2.0", id: 1, method: "ping" },
    { jsonrpc: "2.0", id: 2, method: "ping" },
  ]);
  const refused = await post(pings, "2025-06-18");
  expect(refused.status).toBe(400);
  expect(await refused.json()).toMatchObject({ error: { code: -32600 } });
  const empty = await post("[]", "2025-03-26");
  expect(empty.status).toBe(400);
  expect(await empty.json()).toMatchObject({ error: { code: -32600 } });
  const batched = await post(pings, "2025-03-26");
  expect(batched.status).toBe(200);
  const text = await batched.text();
  expect(text).toContain('"id":1');
  expect(text).toContain('"id":2');
});

test("JSON that is not a JSON-RPC message is an invalid request (-32600), not a parse error", async () => {
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  for (const body of ['{"id":1,"method":"ping"}', '{"jsonrpc":"2.0","id":null,"method":"ping"}', "42", '"x"', "[1]"]) {
    const response = await fetch(`${server.url.origin}/mcp`, { method: "POST", headers, body });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ id: null, error: { code: -32600 } });
  }
  const broken = await fetch(`${server.url.origin}/mcp`, { method: "POST", headers, body: "{not json" });
  expect(broken.status).toBe(400);
  expect(await broken.json()).toMatchObject({ error: { code: -32700 } });
});

test("a 2026-07-28 _meta under an older MCP-Protocol-Version and no session is a header mismatch, as at the bridge", async () => {
  const res = await fetch(`${server.url.origin}/mcp`, {
    method: "POST",
    headers: { ...statelessHeaders("tools/list"), "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list", params: { _meta: statelessMeta() } }),
  });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32020);
});

test("a request naming 2026-07-28 is served statelessly whatever Mcp-Session-Id it carries", async () => {
  const opened = await fetch(`${server.url.origin}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: initialize({}, "2025-11-25"),
  });
  const sessionId = opened.headers.get("mcp-session-id") as string;
  await opened.body?.cancel();
  expect(sessionId).toBeString();
  const modern = (headers: Record<string, string>, method = "tools/list") =>
    fetch(`${server.url.origin}/mcp`, {
      method: "POST",
      headers: { ...statelessHeaders(method), ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list", params: { _meta: META } }),
    });
  // The revision's header checks apply in spite of a live session (the session used to answer it the 2025 way).
  const lying = await modern({ "mcp-session-id": sessionId }, "prompts/list");
  expect(lying.status).toBe(400);
  expect(await lying.json()).toMatchObject({ error: { code: -32020 } });
  // A stale session id is ignored, and none is echoed.
  const stale = await modern({ "mcp-session-id": "gone" });
  expect(stale.status).toBe(200);
  expect(stale.headers.get("mcp-session-id")).toBeNull();
  expect(await stale.json()).toMatchObject({ id: 7, result: { resultType: "complete", tools: [] } });
  const get = await fetch(`${server.url.origin}/mcp`, {
    headers: { accept: "text/event-stream", "mcp-protocol-version": "2026-07-28", "mcp-session-id": sessionId },
  });
  expect(get.status).toBe(405);
  await get.body?.cancel();
});

/** A 2025-06-18 session on the gateway, ready for requests. */
async function openedSession(): Promise<Record<string, string>> {
  const base = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  const opened = await fetch(`${server.url.origin}/mcp`, { method: "POST", headers: base, body: initialize() });
  await opened.text();
  const headers = {
    ...base,
    "mcp-session-id": opened.headers.get("mcp-session-id") as string,
    "mcp-protocol-version": "2025-06-18",
  };
  const ready = JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" });
  await (await fetch(`${server.url.origin}/mcp`, { method: "POST", headers, body: ready })).text();
  return headers;
}

/** The one JSON-RPC message of an answer, JSON or an event stream. */
async function answerOf(response: Response): Promise<{ error?: { code: number; message: string } }> {
  const text = await response.text();
  const data = text.split("\n").find((line) => line.startsWith("data:"));
  return JSON.parse(data === undefined ? text : data.slice(5));
}

test("params the SDK's schemas refuse are invalid params (-32602) in one line, not an internal error with a schema dump", async () => {
  const headers = await openedSession();
  const cases: [string, unknown][] = [
    ["completion/complete", {}],
    ["logging/setLevel", { level: "loud" }],
    ["resources/read", { uri: 5 }],
    ["tools/call", {}],
  ];
  for (const [method, params] of cases) {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 9, method, params });
    const answer = await answerOf(await fetch(`${server.url.origin}/mcp`, { method: "POST", headers, body }));
    expect({ method, code: answer.error?.code }).toEqual({ method, code: -32602 });
    expect(answer.error?.message).toStartWith(`Invalid params for ${method}: params.`);
    expect(answer.error?.message).not.toContain("\n");
  }
  // A 2026-07-28 request is answered by the same server, so the same way.
  const modern = await fetch(`${server.url.origin}/mcp`, {
    method: "POST",
    headers: statelessHeaders("completion/complete"),
    body: JSON.stringify({ jsonrpc: "2.0", id: 10, method: "completion/complete", params: { _meta: META } }),
  });
  const answer = await answerOf(modern);
  expect(answer.error?.code).toBe(-32602);
  expect(answer.error?.message).not.toContain("\n");
});

test("a body that parsed but is no JSON-RPC message the SDK takes is an invalid request (-32600), not a parse error", async () => {
  const headers = await openedSession();
  for (const body of [
    { jsonrpc: "2.0", id: 11, method: "ping", params: [] },
    { jsonrpc: "2.0", id: 12, method: "tools/list", params: 5 },
    { jsonrpc: "2.0", id: 13, method: "ping", extra: true },
  ]) {
    const response = await fetch(`${server.url.origin}/mcp`, { method: "POST", headers, body: JSON.stringify(body) });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: -32600 } });
  }
});

test("a list asked for with a cursor the gateway never handed out is invalid params (-32602), not the first page again", async () => {
  const headers = await openedSession();
  for (const method of ["tools/list", "prompts/list", "resources/list", "resources/templates/list"]) {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 14, method, params: { cursor: "nope" } });
    const answer = await answerOf(await fetch(`${server.url.origin}/mcp`, { method: "POST", headers, body }));
    expect({ method, code: answer.error?.code }).toEqual({ method, code: -32602 });
  }
});
