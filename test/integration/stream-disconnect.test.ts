/**
 * A client that drops an event stream is noticed at once, not at the next keep-alive (15 s): Bun.serve
 * cancels the response body when its client goes away, and `proxy`'s relay (sse-relay.ts) closes the
 * upstream's stream with it, while the gateway stops counting the session's GET stream (front-end.ts).
 * The upstream is an SDK server that counts the event streams it is sending
 * (test/fixtures/member-server.ts `openStreams`).
 *
 * Review 11 O4 took the 15 s that the GET-stream tests of proxy-session-limits.test.ts spent to be a
 * graceful stop waiting for a dropped stream. It was the stream's head: Bun.serve sends it with the
 * first body bytes, and the gateway's GET stream (the SDK's) had none until its keep-alive. The
 * gateway's GET streams now start with a comment, as the stdio bridge's do.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import { createTestGroup, type TestGroup, until } from "../support/gateway-group.ts";
import { startProxy } from "../support/processes.ts";
import { openRawSession, type RawSession } from "../support/raw-session.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

const REVISION = "2025-06-18";
/** Well under the 15 s keep-alive interval, with room for a loaded machine. */
const PROMPTLY_MS = 5_000;

/** A session's GET stream at `url`, open once its first bytes have arrived; `drop` closes it as a client that leaves. */
async function openGetStream(url: string, session: RawSession) {
  const abort = new AbortController();
  const started = performance.now();
  const response = await fetch(url, {
    headers: { accept: "text/event-stream", "mcp-session-id": session.sessionId, "mcp-protocol-version": REVISION },
    signal: abort.signal,
  });
  const headMs = performance.now() - started;
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toStartWith("text/event-stream");
  const first = await (response.body as ReadableStream<Uint8Array>).getReader().read();
  expect(first.done).toBe(false);
  return { headMs, drop: () => abort.abort() };
}

/** A tools/call of the member's `slow` tool (it runs until cancelled), its SSE answer open and waiting. */
async function openWaitingCall(session: RawSession, tool: string, member: MemberServer) {
  const abort = new AbortController();
  const calls = member.slowCalls;
  const response = await session.post(
    JSON.stringify({ jsonrpc: "2.0", id: "slow", method: "tools/call", params: { name: tool, arguments: {} } }),
    { signal: abort.signal },
  );
  expect(response.headers.get("content-type")).toStartWith("text/event-stream");
  expect((await (response.body as ReadableStream<Uint8Array>).getReader().read()).done).toBe(false);
  expect(await until(() => member.slowCalls === calls + 1)).toBe(true);
  return { drop: () => abort.abort() };
}

/** How long the member takes to see its event streams back at `count` (polled); Infinity past `PROMPTLY_MS`. */
async function closedUpstreamWithin(member: MemberServer, count: number): Promise<number> {
  const started = performance.now();
  return (await until(() => member.openStreams === count, PROMPTLY_MS)) ? performance.now() - started : Infinity;
}

describe("mcpmgr proxy", () => {
  let member: MemberServer;
  let proxy: Awaited<ReturnType<typeof startProxy>>;

  beforeAll(async () => {
    member = startMemberServer({ name: "streams", tools: ["slow"] });
    proxy = await startProxy(member.url);
  }, 30_000);
  afterAll(async () => {
    await proxy?.stop();
    await member?.stop();
  });

  test("a client that drops its GET stream: the upstream's GET stream is closed at once", async () => {
    const session = await openRawSession(proxy.url, REVISION, "drops-get");
    expect(await until(() => member.openStreams === 0)).toBe(true);
    const stream = await openGetStream(proxy.url, session);
    expect(member.openStreams).toBe(1);
    stream.drop();
    expect(await closedUpstreamWithin(member, 0)).toBeLessThan(PROMPTLY_MS);
  });

  test("a client that drops a POST's stream while it waits: the upstream's stream is closed at once", async () => {
    const session = await openRawSession(proxy.url, REVISION, "drops-post");
    expect(await until(() => member.openStreams === 0)).toBe(true);
    const call = await openWaitingCall(session, "slow", member);
    expect(member.openStreams).toBe(1);
    call.drop();
    expect(await closedUpstreamWithin(member, 0)).toBeLessThan(PROMPTLY_MS);
  });

  test("a graceful stop right after a client dropped a waiting POST's stream does not wait for it", async () => {
    // A POST's stream is one graceful stop waits for (up to 10 s), as long as the proxy thinks it open.
    const session = await openRawSession(proxy.url, REVISION, "drops-then-stops");
    const call = await openWaitingCall(session, "slow", member);
    call.drop();
    const started = performance.now();
    expect(await proxy.stop()).toBe(0);
    expect(performance.now() - started).toBeLessThan(PROMPTLY_MS);
    expect(await closedUpstreamWithin(member, 0)).toBeLessThan(PROMPTLY_MS);
  });
});

describe("mcpmgr gateway", () => {
  let group: TestGroup;
  let member: MemberServer;

  beforeAll(async () => {
    group = await createTestGroup();
    member = startMemberServer({ name: "member", tools: ["echo"] });
    group.run(member.url, "member", "streams");
  }, 120_000);
  afterAll(async () => {
    await group?.cleanup();
    await member?.stop();
  });

  test("a GET stream is seen open at once, not at the first keep-alive", async () => {
    const gateway = await group.gateway("streams");
    try {
      const session = await openRawSession(gateway.url, REVISION, "listens");
      const stream = await openGetStream(gateway.url, session);
      expect(stream.headMs).toBeLessThan(PROMPTLY_MS);
      stream.drop();
    } finally {
      await gateway.stop();
    }
  });

  test("a session whose client dropped its GET stream is no longer in use: it gives way when the table is full", async () => {
    // Two sessions at most; one idle for 2 s (a tenth of the idle timeout) gives way to a new one.
    const gateway = await group.gatewayWithEnv(
      { MCPMGR_MAX_SESSIONS: "2", MCPMGR_SESSION_IDLE_TIMEOUT: "20s" },
      "streams",
    );
    try {
      const dropped = await openRawSession(gateway.url, REVISION, "dropped");
      const stream = await openGetStream(gateway.url, dropped);
      stream.drop();
      // Opened after the drop: were the dropped stream still counted, this one would give way instead.
      const idle = await openRawSession(gateway.url, REVISION, "idle");
      let third: RawSession | undefined;
      expect(
        await until(async () => {
          third = await openRawSession(gateway.url, REVISION, "third").catch(() => undefined);
          return third !== undefined;
        }, 15_000),
      ).toBe(true);
      const ping = async (session: RawSession) => {
        const response = await session.post(JSON.stringify({ jsonrpc: "2.0", id: "p", method: "ping" }));
        await response.body?.cancel();
        return response.status;
      };
      expect(await ping(dropped)).toBe(404);
      expect(await ping(idle)).toBe(200);
    } finally {
      await gateway.stop();
    }
  });
});
