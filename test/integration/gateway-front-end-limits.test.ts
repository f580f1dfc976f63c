/**
 * The gateway's endpoint against clients that send odd bodies: its front end (an empty group)
 * served by the real listener (proxy/serve.ts) with a short idle timeout, talked to over raw
 * sockets and fetch.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { GroupCatalog } from "../../src/gateway/catalog.ts";
import { gatewayFrontEnd } from "../../src/gateway/front-end.ts";
import { type RunningServer, serve } from "../../src/proxy/serve.ts";
import { until } from "../support/gateway-group.ts";

let server: RunningServer;
let frontEnd: ReturnType<typeof gatewayFrontEnd>;
let catalog: GroupCatalog;

beforeAll(() => {
  catalog = new GroupCatalog({ prefixMode: "always", timeoutMs: 5_000, log: () => {}, onChange: () => {} });
  frontEnd = gatewayFrontEnd({ group: "limits", catalog, timeoutMs: 5_000, sessionIdleMs: 60_000 });
  server = serve({ host: "127.0.0.1", port: 0, handler: frontEnd.handler, idleTimeoutSeconds: 1 });
});

afterAll(async () => {
  await frontEnd?.close();
  catalog?.close();
  await server?.shutdown(1_000);
});

const initialize = (capabilities: Record<string, unknown> = {}) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities, clientInfo: { name: "limits", version: "1" } },
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
