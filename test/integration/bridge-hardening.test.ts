/**
 * Hostile or heavy traffic through the stdio bridge: deeply nested requests are refused
 * at parse time and leave nothing behind; large server output is framed linearly, limited
 * with a clear error, and never stalls other clients; log messages nobody asked for stay
 * with nobody; integers beyond 2^53 reach the server digit for digit; graceful stop and a
 * crashing server end every pending answer with a JSON-RPC error on its stream.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  connectClient,
  messagesOf,
  post,
  rawSession,
  rawToolJson,
  sseEvents,
  startProbeBridge,
  toolCall,
  waitFor,
  waitInFlight,
  type Bridged,
  type ProbeClient,
} from "../fixtures/bridge-probe-client.ts";
import { PROBE_SERVER } from "../fixtures/bridge-probe-client.ts";
import { startBridge } from "../support/bridge-server.ts";
import { howStreamEnds } from "../support/stream-end.ts";

setDefaultTimeout(30_000);

describe("one shared bridge", () => {
  let bridged: Bridged;
  const clients: ProbeClient[] = [];
  beforeAll(async () => {
    bridged = await startProbeBridge();
  });
  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await bridged?.stop();
  });

  test("a body nested 100,000 levels deep is refused with -32600 and leaves no request in flight", async () => {
    const s = await rawSession(bridged.url);
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x","deep":${deep}}}}`;
    const res = await fetch(bridged.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", ...s.headers },
      body,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32600);
    expect(bridged.bridge.inFlightCount).toBe(0);
    // Server→client requests still reach a client (nothing is left registered as busy).
    const a = await connectClient(bridged.url, "A", { serverRequests: true, bridge: bridged.bridge });
    clients.push(a);
    expect(await a.call("sample", { prompt: "still there?" })).toEqual({ answer: "answer from A", model: "model-A" });
  });

  test("a one-line 40 MB answer arrives whole and other clients' health checks stay fast", async () => {
    const s = await rawSession(bridged.url);
    const health = new URL("/health", bridged.url).href;
    let slowest = 0;
    let done = false;
    const probing = (async () => {
      while (!done) {
        const started = performance.now();
        await (await fetch(health)).text();
        slowest = Math.max(slowest, performance.now() - started);
        await Bun.sleep(20);
      }
    })();
    const started = performance.now();
    const res = await post(bridged.url, toolCall(1, "big", { bytes: 40_000_000 }), {
      ...s.headers,
      accept: "application/json",
    });
    const [message] = await messagesOf(res);
    const elapsed = performance.now() - started;
    done = true;
    await probing;
    const result = message?.result as { content: { text: string }[] } | undefined;
    expect(result?.content[0]?.text.length).toBe(40_000_000);
    // Quadratic framing took seconds here and stalled every other client for as long (4 s measured);
    // linear framing parses the line once (a few hundred ms even on a busy machine).
    expect(elapsed).toBeLessThan(10_000);
    expect(slowest).toBeLessThan(2_000);
  });

  test("a log message sent while nothing is in flight reaches only the sessions that asked for logging", async () => {
    const asked = await connectClient(bridged.url, "asked", { bridge: bridged.bridge });
    const silent = await connectClient(bridged.url, "silent", { bridge: bridged.bridge });
    clients.push(asked, silent);
    await asked.client.setLoggingLevel("warning");
    await asked.call("log_later", { tag: "after-the-answer", delayMs: 100 });
    await waitFor(
      () => asked.seen.logs.some((l) => l.data === "after-the-answer"),
      "the late log at the asking session",
    );
    await Bun.sleep(100);
    expect(silent.seen.logs.filter((l) => l.data === "after-the-answer")).toEqual([]);
  });

  test("integers beyond 2^53 reach the server with every digit", async () => {
    const s = await rawSession(bridged.url);
    const body = `{"jsonrpc":"2.0","id":12345678901234567890,"method":"tools/call","params":{"name":"raw_request","arguments":{"n":98765432109876543210,"small":-9007199254740993}}}`;
    const res = await fetch(bridged.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", ...s.headers },
      body,
    });
    const text = await res.text();
    // The client's own id comes back as it sent it.
    expect(text).toContain('"id":12345678901234567890');
    const raw = String(rawToolJson(JSON.parse(text)).raw);
    expect(raw).toContain('"n":98765432109876543210');
    expect(raw).toContain('"small":-9007199254740993');
  });
});

test("an answer larger than the message limit fails its request with a clear error; the bridge goes on", async () => {
  const bridged = await startBridge({ cmd: [process.execPath, PROBE_SERVER], maxMessageBytes: 1024 * 1024 });
  try {
    const s = await rawSession(bridged.url);
    const headers = { ...s.headers, accept: "application/json" };
    const started = performance.now();
    const [big] = await messagesOf(await post(bridged.url, toolCall(1, "big", { bytes: 3_000_000 }), headers));
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(big?.error?.message).toContain("MCPMGR_MAX_MESSAGE_BYTES");
    const [echo] = await messagesOf(await post(bridged.url, toolCall(2, "echo", { text: "after" }), headers));
    expect(rawToolJson(echo).text).toBe("after");
  } finally {
    await bridged.stop();
  }
});

test("a client that stops reading its call's stream is dropped with one warning in the bridge's log", async () => {
  const warnings: string[] = [];
  const onLog = (level: "debug" | "warn", text: string) => {
    if (level === "warn") warnings.push(text);
  };
  const bridged = await startBridge({ cmd: [process.execPath, PROBE_SERVER], bridge: { onLog } });
  try {
    const s = await rawSession(bridged.url);
    // 40 MiB of progress for the call: more than the 16 MiB a stream holds for its client, and the sockets.
    const flood = toolCall(
      3,
      "progress",
      { steps: 4_000, delayMs: 0, tag: "p".repeat(10_240) },
      { progressToken: "f" },
    );
    const response = await post(bridged.url, flood, { ...s.headers, accept: "text/event-stream" });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    await waitFor(() => warnings.length > 0, "the dropped stream's warning", 30_000);
    const rest = await howStreamEnds(reader);
    expect(rest).toBe("reset");
    expect(warnings).toEqual(["a client's event stream was dropped: it did not read 16 MiB of messages"]);
    const other = await rawSession(bridged.url);
    const echoed = await post(bridged.url, toolCall(4, "echo", { text: "after" }), {
      ...other.headers,
      accept: "application/json",
    });
    expect(rawToolJson((await messagesOf(echoed))[0]).text).toBe("after");
  } finally {
    await bridged.stop();
  }
});

describe("pending answers are never cut without a word", () => {
  test("graceful stop: a call still running when the bound runs out ends with a JSON-RPC error event", async () => {
    const bridged = await startProbeBridge();
    try {
      const s = await rawSession(bridged.url);
      const pending = post(bridged.url, toolCall(7, "sleep", { ms: 10_000 }), {
        ...s.headers,
        accept: "text/event-stream",
      });
      await waitInFlight(bridged, 1);
      const started = performance.now();
      const stopped = bridged.server.shutdown(300);
      const events = sseEvents((await pending).body as ReadableStream<Uint8Array>).all();
      await stopped;
      const messages = (await events).filter((e) => e.event === "message").map((e) => JSON.parse(e.data));
      expect(performance.now() - started).toBeLessThan(3_000);
      expect(messages).toEqual([
        { jsonrpc: "2.0", id: 7, error: { code: -32603, message: expect.stringContaining("shutting down") } },
      ]);
    } finally {
      await bridged.stop();
    }
  });

  test("graceful stop lets a call that ends within the bound finish with its result", async () => {
    const bridged = await startProbeBridge();
    try {
      const s = await rawSession(bridged.url);
      const pending = post(bridged.url, toolCall(8, "sleep", { ms: 200 }), {
        ...s.headers,
        accept: "text/event-stream",
      });
      await waitInFlight(bridged, 1);
      const stopped = bridged.server.shutdown(3_000);
      const events = sseEvents((await pending).body as ReadableStream<Uint8Array>).all();
      await stopped;
      const messages = (await events).filter((e) => e.event === "message").map((e) => JSON.parse(e.data));
      expect(messages.map((m) => Object.keys(m).includes("result"))).toEqual([true]);
    } finally {
      await bridged.stop();
    }
  });

  test("a crashing server ends each pending streamed answer with a JSON-RPC error", async () => {
    const bridged = await startProbeBridge();
    try {
      const s = await rawSession(bridged.url);
      // Progress first, so the answer is already flowing as SSE when the server dies.
      const res = await post(
        bridged.url,
        toolCall(9, "progress", { steps: 100, delayMs: 100, tag: "p" }, { progressToken: "t" }),
        { ...s.headers, accept: "application/json, text/event-stream" },
      );
      const events = sseEvents(res.body as ReadableStream<Uint8Array>);
      expect((await events.next())?.event).toBe("message");
      bridged.proc.kill("SIGKILL");
      const rest = (await events.all()).filter((e) => e.event === "message").map((e) => JSON.parse(e.data));
      expect(rest.at(-1)).toEqual({ jsonrpc: "2.0", id: 9, error: { code: -32603, message: "the MCP server exited" } });
    } finally {
      await bridged.stop();
    }
  });

  test("mcpmgr stopping as soon as the server dies still ends the flowing answer with a JSON-RPC error", async () => {
    const bridged = await startProbeBridge();
    try {
      const s = await rawSession(bridged.url);
      const res = await post(
        bridged.url,
        toolCall(10, "progress", { steps: 100, delayMs: 100, tag: "p" }, { progressToken: "t" }),
        { ...s.headers, accept: "application/json, text/event-stream" },
      );
      const events = sseEvents(res.body as ReadableStream<Uint8Array>);
      expect((await events.next())?.event).toBe("message");
      // What `mcpmgr run` does when its server exits: it stops serving at once.
      bridged.proc.kill("SIGKILL");
      await bridged.proc.exited;
      await bridged.server.shutdown(0);
      const rest = (await events.all()).filter((e) => e.event === "message").map((e) => JSON.parse(e.data));
      expect(rest.at(-1)).toMatchObject({ jsonrpc: "2.0", id: 10, error: { code: -32603 } });
    } finally {
      await bridged.stop();
    }
  });
});
