/**
 * The legacy HTTP+SSE front end (2024-11-05) of the stdio bridge: every response
 * travels on the stream of the session that asked, never broadcast, even when
 * sessions use identical JSON-RPC ids; the stream is the session.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import {
  connectClient,
  post,
  rawToolJson,
  sseEvents,
  startProbeBridge,
  toolCall,
  waitFor,
  type Bridged,
  type ProbeClient,
} from "../fixtures/bridge-probe-client.ts";

// Real server processes; generous for slow machines (each test here takes well under 3 s).
setDefaultTimeout(20_000);

let bridged: Bridged;

beforeAll(async () => {
  bridged = await startProbeBridge({ mode: "sse" });
});

afterAll(async () => {
  await bridged?.stop();
});

/** A raw legacy session: the SSE stream and the URL its endpoint event names. */
async function openLegacy() {
  const controller = new AbortController();
  const res = await fetch(bridged.url, { headers: { accept: "text/event-stream" }, signal: controller.signal });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  expect(res.headers.get("x-accel-buffering")).toBe("no");
  const events = sseEvents(res.body as ReadableStream<Uint8Array>);
  const first = await events.next();
  expect(first?.event).toBe("endpoint");
  const endpoint = new URL(first?.data as string, bridged.url).href;
  expect(endpoint).toMatch(/\/messages\?sessionId=[0-9a-f-]{36}$/);
  const send = async (message: unknown) => {
    const answer = await post(endpoint, message);
    expect(answer.status).toBe(202);
    await answer.body?.cancel();
  };
  await send({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: "2024-11-05", capabilities: {}, clientInfo: { name: "raw-sse", version: "1" } },
  });
  const init = await events.nextMessage();
  expect(init.id).toBe(0);
  expect(init.result?.protocolVersion).toBe("2024-11-05");
  await send({ jsonrpc: "2.0", method: "notifications/initialized" });
  return { events, endpoint, send, close: () => controller.abort() };
}

test("two SDK SSE clients with identical ids each receive only their own responses", async () => {
  const clients: ProbeClient[] = await Promise.all(
    ["sse-a", "sse-b"].map((name) => connectClient(bridged.url, name, { sse: true })),
  );
  try {
    for (let round = 0; round < 30; round++) {
      const results = await Promise.all(
        clients.map((c, i) =>
          c.call("echo", { text: `${c.name} round ${round}`, delayMs: (round + i) % 3 }).then((r) => r.text),
        ),
      );
      expect(results).toEqual(clients.map((c) => `${c.name} round ${round}`));
    }
    // A response broadcast to the other session would surface there as an unknown or crossed id.
    for (const c of clients) expect(c.seen.errors).toEqual([]);
  } finally {
    await Promise.allSettled(clients.map((c) => c.client.close()));
  }
});

test("raw streams: each response arrives once, on the stream of the session that asked", async () => {
  const [a, b] = await Promise.all([openLegacy(), openLegacy()]);
  try {
    for (const round of ["first", "second", "third"]) {
      // The same id on both sessions, sent at the same time.
      await Promise.all([
        a.send(toolCall(42, "echo", { text: `A ${round}`, delayMs: 5 })),
        b.send(toolCall(42, "echo", { text: `B ${round}` })),
      ]);
      const [onA, onB] = await Promise.all([a.events.nextMessage(), b.events.nextMessage()]);
      // Had the previous round been broadcast, its foreign copy would be read here first.
      expect(onA.id).toBe(42);
      expect(rawToolJson(onA).text).toBe(`A ${round}`);
      expect(onB.id).toBe(42);
      expect(rawToolJson(onB).text).toBe(`B ${round}`);
    }
  } finally {
    a.close();
    b.close();
  }
});

test("closing the stream ends the session: its endpoint answers 404 afterwards", async () => {
  const a = await openLegacy();
  const sessionId = new URL(a.endpoint).searchParams.get("sessionId") as string;
  expect(bridged.bridge.getSession(sessionId)).toBeDefined();
  a.close();
  await waitFor(() => bridged.bridge.getSession(sessionId) === undefined, "the session to end with its stream");
  const res = await post(a.endpoint, { jsonrpc: "2.0", id: 1, method: "ping" });
  expect(res.status).toBe(404);
  expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32001);
});

test("one session's requests in progress are capped: past the cap a POST is 429, and nothing more reaches the server", async () => {
  const session = await openLegacy();
  try {
    const statuses: number[] = [];
    for (let i = 0; i < 260; i++) {
      const answer = await post(session.endpoint, toolCall(1000 + i, "sleep", { ms: 20_000 }));
      statuses.push(answer.status);
      await answer.body?.cancel();
    }
    expect(statuses.slice(0, 256).every((status) => status === 202)).toBe(true);
    expect(statuses.slice(256)).toEqual([429, 429, 429, 429]);
    expect(bridged.bridge.inFlightCount).toBe(256);
  } finally {
    session.close();
  }
  // Closing the stream ends the session, and with it what it had in progress.
  await waitFor(() => bridged.bridge.inFlightCount === 0, "the session's requests to be cancelled");
});

test("a message that is not JSON is refused with -32700, one nested past the bound with -32600", async () => {
  const session = await openLegacy();
  try {
    const send = (body: string) =>
      fetch(session.endpoint, { method: "POST", headers: { "content-type": "application/json" }, body });
    const notJson = await send('{"jsonrpc":"2.0","id":1,');
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as { error: unknown }).error).toEqual({
      code: -32700,
      message: "Parse error: the body is not JSON",
    });
    const deep = await send(`${"[".repeat(300)}${"]".repeat(300)}`);
    expect(deep.status).toBe(400);
    expect(((await deep.json()) as { error: unknown }).error).toEqual({
      code: -32600,
      message: "Invalid Request: JSON nested deeper than 256 levels",
    });
  } finally {
    session.close();
  }
});
