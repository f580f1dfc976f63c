/**
 * MCPMGR_MAX_SESSIONS: past the limit a new session is refused with 503, a JSON-RPC error and
 * Retry-After, until one ends — through the stdio bridge (streamable HTTP and legacy SSE),
 * through `proxy` in front of a streamable-HTTP and a legacy SSE server, and through `gateway`.
 * A full table is not a lock-out until the idle timeout (review 9 F6): once its sessions have gone
 * without requests for the grace time (a tenth of MCPMGR_SESSION_IDLE_TIMEOUT here: 2 s), a new
 * session ends the least recently used one, whose client then gets 404.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import {
  CONFORMANCE_FIXTURE,
  runStdioFixture,
  startConformanceServer,
  type RunningFixture,
} from "../support/conformance.ts";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import { createTestGroup, type TestGroup, until } from "../support/gateway-group.ts";
import { CLI_ENTRY, spawnUntil, startEverything, startProxy } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const LIMIT = { MCPMGR_MAX_SESSIONS: "2" };
/** The same limit, with a grace of 2 s before an idle session gives way (and 20 s before it expires). */
const LIMIT_IDLE = { MCPMGR_MAX_SESSIONS: "2", MCPMGR_SESSION_IDLE_TIMEOUT: "20s" };

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "limits-test", version: "1" } },
};

const post = (url: string, body: unknown, session?: string) =>
  fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(session ? { "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" } : {}),
    },
    body: JSON.stringify(body),
  });

async function expectRefused(response: Response): Promise<void> {
  expect(response.status).toBe(503);
  expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
  const body = (await response.json()) as { error?: { code: number; message: string } };
  expect(body.error?.message).toContain("MCPMGR_MAX_SESSIONS");
}

/** Two sessions opened one after the other (`pauseMs` apart), each with its own id. */
async function openSessions(url: string, pauseMs: number): Promise<string[]> {
  const sessions: string[] = [];
  for (let i = 0; i < 2; i++) {
    const response = await post(url, initialize);
    expect(response.status).toBe(200);
    sessions.push(response.headers.get("mcp-session-id") as string);
    await response.text();
    if (pauseMs > 0) await Bun.sleep(pauseMs);
  }
  expect(new Set(sessions).size).toBe(2);
  return sessions;
}

/** Two sessions open, the third refused; once one ends, a new one opens. */
async function expectStreamableLimit(url: string): Promise<void> {
  const sessions = await openSessions(url, 0);
  await expectRefused(await post(url, initialize));
  const deleted = await fetch(url, {
    method: "DELETE",
    headers: { "mcp-session-id": sessions[0] as string, "mcp-protocol-version": "2025-06-18" },
  });
  expect(deleted.status).toBeLessThan(300);
  await deleted.body?.cancel();
  const again = await post(url, initialize);
  expect(again.status).toBe(200);
  await again.text();
}

/** A new session, initialized once the full table has made room (polled for 10 s from `started`). */
async function openOnceRoomIsMade(url: string, started: number): Promise<void> {
  let opened: Response | undefined;
  while (Date.now() - started < 10_000) {
    opened = await post(url, initialize);
    if (opened.status === 200) break;
    await opened.body?.cancel();
    await Bun.sleep(200);
  }
  expect(opened?.status).toBe(200);
  await opened?.text();
}

/** A ping in `session`: 200 while it lives, 404 once it has given way. */
function pingIn(url: string, session: string): Promise<Response> {
  return post(url, { jsonrpc: "2.0", id: 2, method: "ping" }, session);
}

/**
 * Two sessions opened and abandoned fill the table: a new one is refused while they are fresh, and
 * opens once they have been idle for the grace time (long before they expire), ending the older.
 */
async function expectIdleGivesWay(url: string): Promise<void> {
  const sessions = await openSessions(url, 100); // the first is the least recently used
  const started = Date.now();
  await expectRefused(await post(url, initialize));
  await openOnceRoomIsMade(url, started);
  // Well before MCPMGR_SESSION_IDLE_TIMEOUT (20 s): the older session gave way, the newer one lives on.
  expect(Date.now() - started).toBeLessThan(15_000);
  const ping = (session: string) => pingIn(url, session);
  const older = await ping(sessions[0] as string);
  expect(older.status).toBe(404);
  await older.body?.cancel();
  const newer = await ping(sessions[1] as string);
  expect(newer.status).toBe(200);
  await newer.text();
}

/**
 * Review 11 F3: a session whose client holds its GET stream (or waits on a long call) is in use, though
 * its last request is the oldest: the `proxy` saw a request only as it started and the gateway counted
 * only calls in flight, so such a session gave way (and was ended upstream) while the idle one lived on.
 */
async function expectStreamingKept(url: string): Promise<void> {
  const open = async () => {
    const response = await post(url, initialize);
    expect(response.status).toBe(200);
    await response.text();
    return response.headers.get("mcp-session-id") as string;
  };
  const streaming = await open();
  const stream = new AbortController();
  const get = await fetch(url, {
    headers: { accept: "text/event-stream", "mcp-session-id": streaming, "mcp-protocol-version": "2025-06-18" },
    signal: stream.signal,
  });
  expect(get.status).toBe(200);
  const idle = await open(); // used after the GET began: the streaming session is the least recently used
  try {
    const started = Date.now();
    await openOnceRoomIsMade(url, started);
    const ping = (session: string) => pingIn(url, session);
    const ended = await ping(idle);
    expect(ended.status).toBe(404);
    await ended.body?.cancel();
    const kept = await ping(streaming);
    expect(kept.status).toBe(200);
    await kept.text();
  } finally {
    await get.body?.cancel().catch(() => {});
    stream.abort();
  }
}

/**
 * The converse of `expectStreamingKept`: a session is in use only while a request or stream of its own is
 * open. Once its answers have ended (one without a body, one streamed) and its client has dropped its GET
 * stream (and the upstream's stream is
 * closed: `member.openStreams`), it is an idle session like any other, older than one opened after it, so
 * it is the one that gives way. A relay that kept the session's hold past its stream's end would keep
 * every session that ever streamed in use for good: the table would fill and refuse new sessions.
 */
async function expectStreamEndReleases(url: string, member: MemberServer): Promise<void> {
  const opened = await post(url, initialize);
  expect(opened.status).toBe(200);
  await opened.text();
  const streamed = opened.headers.get("mcp-session-id") as string;
  // Answered without a body (202): the hold ends with the answer.
  const initialized = await post(url, { jsonrpc: "2.0", method: "notifications/initialized" }, streamed);
  expect(initialized.status).toBe(202);
  await initialized.body?.cancel();
  const call = { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "echo", arguments: { text: "x" } } };
  const answered = await post(url, call, streamed);
  expect(answered.headers.get("content-type")).toStartWith("text/event-stream");
  expect(await answered.text()).toContain('"id":3');
  const stream = new AbortController();
  const get = await fetch(url, {
    headers: { accept: "text/event-stream", "mcp-session-id": streamed, "mcp-protocol-version": "2025-06-18" },
    signal: stream.signal,
  });
  expect(get.status).toBe(200);
  expect(await until(() => member.openStreams === 1)).toBe(true);
  stream.abort();
  expect(await until(() => member.openStreams === 0)).toBe(true);
  const idle = await post(url, initialize);
  expect(idle.status).toBe(200);
  await idle.text();
  await openOnceRoomIsMade(url, Date.now());
  const ended = await pingIn(url, streamed);
  expect(ended.status).toBe(404);
  await ended.body?.cancel();
  const kept = await pingIn(url, idle.headers.get("mcp-session-id") as string);
  expect(kept.status).toBe(200);
  await kept.text();
}

/** Two legacy streams open, the third refused; once one closes, a new one opens. */
async function expectLegacyLimit(url: string): Promise<void> {
  const open = async () => {
    const controller = new AbortController();
    const response = await fetch(url, { headers: { accept: "text/event-stream" }, signal: controller.signal });
    return { response, close: () => controller.abort() };
  };
  const streams = [await open(), await open()];
  for (const stream of streams) {
    expect(stream.response.status).toBe(200);
    // The session exists once its endpoint event has passed.
    const reader = (stream.response.body as ReadableStream<Uint8Array>).getReader();
    let text = "";
    while (!text.includes("event: endpoint")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the legacy stream ended before its endpoint event");
      text += new TextDecoder().decode(value);
    }
  }
  const third = await open();
  await expectRefused(third.response);
  streams[0]?.close();
  let reopened: Awaited<ReturnType<typeof open>> | undefined;
  for (let i = 0; i < 100; i++) {
    reopened = await open();
    if (reopened.response.status === 200) break;
    await reopened.response.body?.cancel();
    await Bun.sleep(50);
  }
  expect(reopened?.response.status).toBe(200);
  reopened?.close();
  streams[1]?.close();
}

describe("the stdio bridge (mcpmgr run)", () => {
  const runs: { stop(): Promise<void> }[] = [];
  const run = async (...extra: string[]) => {
    const running = await runStdioFixture(CONFORMANCE_FIXTURE, { args: extra, env: LIMIT });
    runs.push(running);
    return running.url;
  };
  afterAll(async () => {
    await Promise.allSettled(runs.map((r) => r.stop()));
  });

  test("streamable HTTP", async () => {
    await expectStreamableLimit(await run());
  }, 60_000);

  test("legacy SSE", async () => {
    await expectLegacyLimit(await run("--proxy-mode", "sse"));
  }, 60_000);

  test("abandoned sessions give way to a new one after the grace time", async () => {
    const running = await runStdioFixture(CONFORMANCE_FIXTURE, { env: LIMIT_IDLE });
    runs.push(running);
    await expectIdleGivesWay(running.url);
  }, 60_000);

  test("a session with its GET stream open does not give way, though its last request is the oldest", async () => {
    const running = await runStdioFixture(CONFORMANCE_FIXTURE, { env: LIMIT_IDLE });
    runs.push(running);
    await expectStreamingKept(running.url);
  }, 60_000);
});

describe("mcpmgr proxy", () => {
  let fixture: RunningFixture;
  let everything: Awaited<ReturnType<typeof startEverything>>;
  /**
   * For the GET stream: the conformance fixture's (an SDK server on Bun.serve) sends its head only
   * with its first keep-alive, 15 s on, and the proxy's head can only follow the upstream's.
   */
  let member: MemberServer;

  beforeAll(async () => {
    [fixture, everything] = await Promise.all([startConformanceServer(), startEverything("sse")]);
    member = startMemberServer({ name: "streaming" });
  }, 30_000);
  afterAll(async () => {
    await Promise.allSettled([fixture?.stop(), everything?.stop(), member?.stop()]);
  });
  /** `mcpmgr proxy` in front of `upstream` under `env`, checked by `check`, then stopped. */
  const withProxy = async (upstream: string, env: Record<string, string>, check: (url: string) => Promise<void>) => {
    const proxy = await startProxy(upstream, [], { env });
    try {
      await check(proxy.url);
    } finally {
      await proxy.stop();
    }
  };

  test("in front of a streamable-HTTP server", async () => {
    await withProxy(fixture.url, LIMIT, expectStreamableLimit);
  }, 60_000);

  test("abandoned sessions give way to a new one after the grace time", async () => {
    await withProxy(fixture.url, LIMIT_IDLE, expectIdleGivesWay);
  }, 60_000);

  test("a session with a stream open does not give way, though its last request is the oldest", async () => {
    await withProxy(member.url, LIMIT_IDLE, expectStreamingKept);
  }, 60_000);

  test("a session whose answers and streams have ended (a bodiless answer, a streamed one, a dropped GET stream) gives way", async () => {
    await withProxy(member.url, LIMIT_IDLE, (url) => expectStreamEndReleases(url, member));
  }, 60_000);

  test("in front of a legacy SSE server", async () => {
    await withProxy(everything.url, LIMIT, expectLegacyLimit);
  }, 60_000);
});

describe("mcpmgr gateway", () => {
  let group: TestGroup;

  beforeAll(async () => {
    group = await createTestGroup();
    group.run(await group.packageOf(CONFORMANCE_FIXTURE), "limited-one", "default", "stdio");
  }, 120_000);
  afterAll(async () => {
    await group?.cleanup();
  });
  /** `mcpmgr gateway default` under `env`, checked by `check`, then stopped. */
  const withGateway = async (env: Record<string, string>, check: (url: string) => Promise<void>) => {
    const running = await spawnUntil([process.execPath, CLI_ENTRY, "gateway", "default"], /^(http:\/\/\S+)$/m, {
      env: { MCPMGR_HOME: group.home, MCPMGR_RUNTIME: "process", ...env },
      timeoutMs: 30_000,
    });
    try {
      await check(running.match[1] as string);
    } finally {
      await running.stop();
    }
  };

  test("2025-era sessions", async () => {
    await withGateway(LIMIT, expectStreamableLimit);
  }, 60_000);

  test("abandoned 2025-era sessions give way to a new one after the grace time", async () => {
    await withGateway(LIMIT_IDLE, expectIdleGivesWay);
  }, 60_000);

  test("a 2025-era session with its GET stream open does not give way, though its last request is the oldest", async () => {
    await withGateway(LIMIT_IDLE, expectStreamingKept);
  }, 60_000);
});
