/**
 * How the transparent forwarder cancels an upstream request: the client leaving, the headers
 * timeout (one timer for every waiting request: waiting-requests.ts), a relayed stream the client
 * stops reading; with mcpmgr's own client (a Cancellation in place of an AbortSignal) and with a
 * fetch given instead (which reads the signal that follows it). Against raw upstreams on loopback.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { transparentForwarder } from "../../src/proxy/forward.ts";
import { detachedContext } from "../../src/proxy/handler.ts";
import { LiveStreams } from "../../src/proxy/live-streams.ts";
import { Cancellation } from "../../src/proxy/upstream/cancellation.ts";
import { WaitingRequests } from "../../src/proxy/waiting-requests.ts";
import { eventually, rawServer } from "../support/raw-http.ts";

setDefaultTimeout(60_000);

function forwarder(target: string, extra: Partial<Parameters<typeof transparentForwarder>[0]> = {}) {
  return transparentForwarder({
    target: new URL(target),
    endpointPrefix: undefined,
    trustProxyHeaders: false,
    live: new LiveStreams(),
    ...extra,
  });
}

const post = (signal?: AbortSignal) =>
  new Request("http://127.0.0.1:9999/mcp", { method: "POST", body: "{}", ...(signal ? { signal } : {}) });

/** Bun's fetch as a given upstream fetch: it reads `init.signal`. */
const givenFetch = (url: string, init: RequestInit) => fetch(url, init);

describe("the headers timeout", () => {
  test("each waiting request times out at its own deadline, also one that started while another waited", async () => {
    await using silent = rawServer(() => {});
    const handle = forwarder(`${silent.url}/mcp`, { headersTimeoutMs: 400 });
    const firstStarted = performance.now();
    const first = Promise.resolve(handle(post(), detachedContext())).then((res) => ({
      res,
      after: performance.now() - firstStarted,
    }));
    await eventually(() => silent.requests.length === 1, 5_000, "the first request to reach the upstream");
    await Bun.sleep(150);
    const secondStarted = performance.now();
    const second = Promise.resolve(handle(post(), detachedContext())).then((res) => ({
      res,
      after: performance.now() - secondStarted,
    }));
    const [a, b] = await Promise.all([first, second]);
    expect(a.res.status).toBe(504);
    expect(b.res.status).toBe(504);
    // Neither before its own 400 ms (the second is not ended with the first), nor never.
    expect(a.after).toBeGreaterThanOrEqual(390);
    expect(b.after).toBeGreaterThanOrEqual(390);
    expect(b.after).toBeLessThan(10_000);
  });

  test("a request answered in time is not cancelled later by the timer", async () => {
    await using upstream = rawServer((c) =>
      c.socket.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"),
    );
    const handle = forwarder(`${upstream.url}/mcp`, { headersTimeoutMs: 200 });
    const res = await handle(post(), detachedContext());
    await Bun.sleep(300);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("{}");
    expect(upstream.connections[0]?.closed).toBe(false);
  });

  test("with a fetch given instead of mcpmgr's client, a silent upstream gives 504", async () => {
    await using silent = rawServer(() => {});
    const res = await forwarder(`${silent.url}/mcp`, { headersTimeoutMs: 300, fetch: givenFetch })(
      post(),
      detachedContext(),
    );
    expect(res.status).toBe(504);
  });
});

describe("the client leaving", () => {
  test("with a fetch given instead of mcpmgr's client: 499, and the upstream connection is closed", async () => {
    await using silent = rawServer(() => {});
    const client = new AbortController();
    const pending = forwarder(`${silent.url}/mcp`, { fetch: givenFetch })(post(client.signal), detachedContext());
    await eventually(() => silent.requests.length === 1, 5_000, "the request to reach the upstream");
    client.abort();
    expect((await pending).status).toBe(499);
    await eventually(() => silent.connections[0]?.closed === true, 5_000, "the upstream to see the close");
  });

  test("a client that leaves while its body is still being read: 499, and nothing is sent upstream", async () => {
    await using upstream = rawServer((c) =>
      c.socket.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"),
    );
    const client = new AbortController();
    let finishBody = () => {};
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("{"));
        finishBody = () => {
          controller.enqueue(new TextEncoder().encode("}"));
          controller.close();
        };
      },
    });
    // A declared small length: the forwarder reads the body whole before it sends anything.
    const req = new Request("http://127.0.0.1:9999/mcp", {
      method: "POST",
      body,
      duplex: "half",
      headers: { "content-length": "2" },
      signal: client.signal,
    } as RequestInit);
    const pending = Promise.resolve(forwarder(`${upstream.url}/mcp`)(req, detachedContext()));
    await Bun.sleep(50);
    client.abort();
    finishBody();
    expect((await pending).status).toBe(499);
    await Bun.sleep(100);
    expect(upstream.requests.length).toBe(0);
  });

  test("a client that stops reading a relayed event stream closes the upstream connection", async () => {
    const event = 'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/x"}\n\n';
    await using streaming = rawServer((c) =>
      c.socket.write(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
          `${event.length.toString(16)}\r\n${event}\r\n`,
      ),
    );
    const res = await forwarder(`${streaming.url}/mcp`)(
      new Request("http://127.0.0.1:9999/mcp", { method: "GET", headers: { accept: "text/event-stream" } }),
      detachedContext(),
    );
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    await reader.cancel();
    await eventually(() => streaming.connections[0]?.closed === true, 5_000, "the upstream to see the close");
  });
});

describe("Cancellation", () => {
  test("its signal, made before or after the abort, is aborted with the same reason", () => {
    const before = new Cancellation();
    const early = before.signal;
    const reason = new Error("gone");
    before.abort(reason);
    expect(early.aborted).toBe(true);
    expect(early.reason).toBe(reason);
    const after = new Cancellation();
    after.abort(reason);
    expect(after.signal.aborted).toBe(true);
    expect(after.signal.reason).toBe(reason);
    expect(after.reason).toBe(reason);
  });

  test("without a reason it aborts with an AbortController's AbortError", () => {
    const cancel = new Cancellation();
    cancel.abort();
    expect(cancel.aborted).toBe(true);
    expect((cancel.reason as Error).name).toBe("AbortError");
    expect(cancel.signal.reason).toBe(cancel.reason);
  });

  test("its listener is told once; one removed, or replaced by another, is not told", () => {
    const calls: string[] = [];
    const cancel = new Cancellation();
    const first = () => calls.push("first");
    cancel.listen(first);
    cancel.unlisten(first);
    cancel.listen(() => calls.push("second"));
    cancel.unlisten(first); // no longer the listener: changes nothing
    cancel.abort(new Error("x"));
    cancel.abort(new Error("y"));
    expect(calls).toEqual(["second"]);
    expect((cancel.reason as Error).message).toBe("x");
  });

  test("a listener that throws is reported, as an AbortSignal's would be, not thrown at the caller of abort", () => {
    // In its own process: bun test fails whichever test is running when an error is reported.
    const script = `
      import { Cancellation } from ${JSON.stringify(new URL("../../src/proxy/upstream/cancellation.ts", import.meta.url).pathname)};
      const reported = [];
      process.on("uncaughtException", (err) => reported.push(err.message));
      const cancel = new Cancellation();
      cancel.listen(() => { throw new Error("boom"); });
      let thrown = "nothing";
      try { cancel.abort(new Error("x")); } catch (err) { thrown = err.message; }
      await Bun.sleep(10);
      console.log(JSON.stringify({ thrown, reported, aborted: cancel.aborted }));
    `;
    const run = Bun.spawnSync([process.execPath, "-e", script], { stderr: "pipe" });
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(run.stdout.toString())).toEqual({ thrown: "nothing", reported: ["boom"], aborted: true });
  });
});

describe("WaitingRequests", () => {
  test("a graceful stop sees every request still waiting, none that left", () => {
    const waiting = new WaitingRequests(60_000, () => {});
    const [a, b, c] = [new Cancellation(), new Cancellation(), new Cancellation()];
    const entries = [a, b, c].map((cancel) => waiting.add(cancel));
    waiting.remove(entries[1] as NonNullable<(typeof entries)[1]>);
    waiting.remove(entries[1] as NonNullable<(typeof entries)[1]>); // twice: no harm
    expect(waiting.cancellations()).toEqual([a, c]);
    waiting.remove(entries[0] as NonNullable<(typeof entries)[0]>);
    waiting.remove(entries[2] as NonNullable<(typeof entries)[2]>);
    expect(waiting.cancellations()).toEqual([]);
  });

  test("a headers timeout longer than a timer can take (25 days or more) neither fires early nor spins", () => {
    // In its own process: what shows the spin is the runtime's warning on stderr, one per re-armed timer.
    const script = `
      import { WaitingRequests } from ${JSON.stringify(new URL("../../src/proxy/waiting-requests.ts", import.meta.url).pathname)};
      import { Cancellation } from ${JSON.stringify(new URL("../../src/proxy/upstream/cancellation.ts", import.meta.url).pathname)};
      let warnings = 0;
      process.on("warning", () => warnings++);
      const timedOut = [];
      const waiting = new WaitingRequests(30 * 24 * 3_600_000, (cancel) => timedOut.push(cancel));
      const cancel = new Cancellation();
      waiting.add(cancel);
      await Bun.sleep(300);
      console.log(JSON.stringify({ timedOut: timedOut.length, aborted: cancel.aborted, warnings }));
    `;
    const run = Bun.spawnSync([process.execPath, "-e", script], { stderr: "pipe" });
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(run.stdout.toString())).toEqual({ timedOut: 0, aborted: false, warnings: 0 });
    expect(run.stderr.toString()).not.toContain("TimeoutOverflowWarning");
  });

  test("the timer moves on to the next deadline when the first request left early", async () => {
    const timedOut: Cancellation[] = [];
    const waiting = new WaitingRequests(200, (cancel) => timedOut.push(cancel));
    const early = new Cancellation();
    const late = new Cancellation();
    const earlyEntry = waiting.add(early);
    await Bun.sleep(100);
    const lateStarted = performance.now();
    waiting.add(late);
    waiting.remove(earlyEntry);
    await eventually(() => timedOut.length === 1, 5_000, "the second request to time out");
    expect(timedOut).toEqual([late]);
    expect(performance.now() - lateStarted).toBeGreaterThanOrEqual(190);
  });
});
