/**
 * Time and failure in the stdio bridge: requests the server does not answer in time
 * fail with a JSON-RPC error (and are cancelled at the server), idle sessions expire
 * even with a GET stream open, stray non-JSON output of the server is skipped, and
 * when the server process exits every pending request fails and every session ends.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import {
  connectClient,
  messagesOf,
  openGetStream,
  post,
  rawSession,
  rawToolJson,
  startProbeBridge,
  toolCall,
  waitFor,
  type Bridged,
  type ProbeClient,
  waitInFlight,
} from "../fixtures/bridge-probe-client.ts";

// Real server processes; generous for slow machines (each test here takes well under 3 s).
setDefaultTimeout(20_000);

describe("timeouts and expiry (requestTimeoutMs 300, sessionIdleMs 1000)", () => {
  let bridged: Bridged;

  beforeAll(async () => {
    bridged = await startProbeBridge({ bridge: { requestTimeoutMs: 300, sessionIdleMs: 1_000 } });
  });

  afterAll(async () => {
    await bridged?.stop();
  });

  const stats = async () => {
    const s = await rawSession(bridged.url);
    return rawToolJson((await messagesOf(await post(bridged.url, toolCall(1, "stats"), s.headers)))[0]);
  };

  test("a tool call the server does not answer in time gets a JSON-RPC error, and the server is told to cancel it", async () => {
    const s = await rawSession(bridged.url);
    const started = performance.now();
    const res = await post(bridged.url, toolCall("slow", "sleep", { ms: 5_000 }), {
      ...s.headers,
      accept: "application/json",
    });
    const elapsed = performance.now() - started;
    expect(res.status).toBe(200);
    const [message, ...rest] = await messagesOf(res);
    expect(rest).toEqual([]);
    expect(message?.id).toBe("slow");
    expect(message?.error?.code).toBe(-32603);
    expect(message?.error?.message).toContain("tools/call");
    expect(elapsed).toBeGreaterThanOrEqual(300);
    expect(elapsed).toBeLessThan(2_500); // the sweeper runs every second
    // The server got notifications/cancelled for it and stopped working on it.
    let seen: Record<string, any> = {};
    const deadline = Date.now() + 10_000;
    for (;;) {
      seen = await stats();
      if (seen.aborted.length > 0 || Date.now() > deadline) break;
      await Bun.sleep(50);
    }
    expect(seen.cancelled).toHaveLength(1);
    expect(seen.aborted).toEqual(seen.cancelled);
  });

  test("the SDK client sees the timeout as an McpError, not a hang", async () => {
    const c = await connectClient(bridged.url, "sdk-timeout");
    try {
      const failure = await c.call("sleep", { ms: 5_000 }, { timeout: 4_000 }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(failure).toBeInstanceOf(McpError);
      expect((failure as McpError).code).toBe(-32603);
    } finally {
      await c.close();
    }
  });

  test("an idle session expires (404 afterwards) even while its GET stream is open, and the stream ends; an active one stays", async () => {
    const idle = await rawSession(bridged.url);
    const active = await rawSession(bridged.url);
    const get = await openGetStream(bridged.url, idle.headers, bridged.bridge);
    const started = performance.now();
    let keepAlive = true;
    const pinger = (async () => {
      let id = 0;
      while (keepAlive) {
        const res = await post(bridged.url, { jsonrpc: "2.0", id: ++id, method: "ping" }, active.headers);
        if (res.status !== 200) throw new Error(`the active session was refused: ${res.status}`);
        await res.body?.cancel();
        await Bun.sleep(150);
      }
    })();
    try {
      await waitFor(() => bridged.bridge.getSession(idle.sessionId) === undefined, "the idle session to expire", 4_000);
      expect(performance.now() - started).toBeGreaterThanOrEqual(900);
      const events = await get.events();
      expect(await events.ends(2_000)).toBe(true);
      const res = await post(bridged.url, { jsonrpc: "2.0", id: 1, method: "ping" }, idle.headers);
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32001);
      expect(bridged.bridge.getSession(active.sessionId)).toBeDefined();
    } finally {
      keepAlive = false;
      await pinger;
    }
  });
});

describe("expiry with a request in flight (sessionIdleMs 1000)", () => {
  let bridged: Bridged;

  beforeAll(async () => {
    bridged = await startProbeBridge({ bridge: { requestTimeoutMs: 10_000, sessionIdleMs: 1_000 } });
  });

  afterAll(async () => {
    await bridged?.stop();
  });

  test("a session waiting on its request is not idle: it outlives the idle timeout and gets its answer", async () => {
    const idle = await rawSession(bridged.url);
    const waiting = await rawSession(bridged.url);
    const answer = post(bridged.url, toolCall("long", "sleep", { ms: 2_500 }), {
      ...waiting.headers,
      accept: "application/json",
    }).then(messagesOf);
    // The idle session's end shows the sweep has passed both sessions' cutoff.
    await waitFor(() => bridged.bridge.getSession(idle.sessionId) === undefined, "the idle session to expire", 4_000);
    expect(bridged.bridge.getSession(waiting.sessionId)).toBeDefined();
    const [message] = await answer;
    expect(message?.id).toBe("long");
    expect(message?.error).toBeUndefined();
    expect(bridged.bridge.getSession(waiting.sessionId)).toBeDefined();
  });
});

describe("server output and exit", () => {
  let bridged: Bridged;

  beforeAll(async () => {
    bridged = await startProbeBridge({ noise: true });
  });

  afterAll(async () => {
    await bridged?.stop();
  });

  test("non-JSON lines on the server's stdout are skipped and the session keeps working", async () => {
    // The banner and the half-JSON line the probe prints at start-up.
    await waitFor(() => bridged.invalidLines.length >= 2, "the start-up noise");
    expect(bridged.invalidLines[0]).toContain("banner that is not JSON");
    expect(bridged.invalidLines).toContain("{ this line starts like JSON but is not");
    const before = bridged.invalidLines.length;
    const c = await connectClient(bridged.url, "noisy", { bridge: bridged.bridge });
    try {
      const texts = await Promise.all(
        Array.from({ length: 20 }, (_, i) => c.call("echo", { text: `through the noise ${i}` }).then((r) => r.text)),
      );
      expect(texts).toEqual(Array.from({ length: 20 }, (_, i) => `through the noise ${i}`));
      // One noise line per tool call, each skipped.
      expect(bridged.invalidLines.length - before).toBe(20);
      expect(c.seen.errors).toEqual([]);
    } finally {
      await c.close();
    }
  });

  test("when the server exits, pending requests fail with a JSON-RPC error, sessions end (404) and initialize gets 503", async () => {
    const a = await rawSession(bridged.url);
    const b = await rawSession(bridged.url);
    const bGet = await openGetStream(bridged.url, b.headers, bridged.bridge);
    const sdk: ProbeClient = await connectClient(bridged.url, "sdk-pending", { bridge: bridged.bridge });

    const pendingRaw = post(bridged.url, toolCall(1, "sleep", { ms: 10_000 }), {
      ...a.headers,
      accept: "application/json",
    }).then(messagesOf);
    const pendingSdk = sdk.call("sleep", { ms: 10_000 }, { timeout: 8_000 }).then(
      () => undefined,
      (err: unknown) => err,
    );
    await waitInFlight(bridged, 2);
    const exitCall = post(bridged.url, toolCall(2, "exit", { code: 3, delayMs: 100 }), b.headers).then(messagesOf);

    const started = performance.now();
    const [[fromA], [fromB], sdkFailure] = await Promise.all([pendingRaw, exitCall, pendingSdk]);
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(await bridged.proc.exited).toBe(3);
    expect(fromA?.id).toBe(1);
    expect(fromA?.error?.code).toBe(-32603);
    expect(fromA?.error?.message).toContain("exited");
    expect(fromB?.id).toBe(2);
    expect(fromB?.error?.code).toBe(-32603);
    expect(sdkFailure).toBeInstanceOf(McpError);
    expect((sdkFailure as McpError).code).toBe(-32603);

    expect(bridged.bridge.isClosed).toBe(true);
    expect(bridged.bridge.sessionCount).toBe(0);
    const events = await bGet.events();
    expect(await events.ends(2_000)).toBe(true);
    for (const s of [a, b]) {
      const res = await post(bridged.url, { jsonrpc: "2.0", id: 9, method: "ping" }, s.headers);
      expect(res.status).toBe(404);
      await res.body?.cancel();
    }
    const init = await post(bridged.url, {
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "late", version: "1" } },
    });
    expect(init.status).toBe(503);
    expect(((await init.json()) as { error: { code: number } }).error.code).toBe(-32603);
    await sdk.close().catch(() => {});
  });
});
