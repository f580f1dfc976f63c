/** Keep-alive comments and the endpoint rewrite, on streams we control byte by byte. */
import { describe, expect, test } from "bun:test";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { LiveStreams } from "../../src/proxy/live-streams.ts";
import { endpointEventRewriter } from "../../src/proxy/sse-endpoint.ts";
import { PendingAnswers, requestIdsOf } from "../../src/proxy/sse-answers.ts";
import { relaySse } from "../../src/proxy/sse-relay.ts";

const encode = (text: string) => new TextEncoder().encode(text);

/** An upstream whose chunks we push by hand. */
function manualUpstream() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  return { stream, push: (text: string) => controller.enqueue(encode(text)), end: () => controller.close() };
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  return new Response(stream).text();
}

function events(text: string): EventSourceMessage[] {
  const found: EventSourceMessage[] = [];
  createParser({ onEvent: (e) => found.push(e) }).feed(text);
  return found;
}

describe("keep-alive comments", () => {
  test("are sent while the upstream is quiet, never inside a line, and change no event", async () => {
    const upstream = manualUpstream();
    const relayed = relaySse(upstream.stream, { pingIntervalMs: 30 });
    const done = readAll(relayed);
    upstream.push('event: message\ndata: {"a":');
    await Bun.sleep(120); // quiet mid-line: no ping may be inserted here
    upstream.push("1}\n\n");
    await Bun.sleep(120); // quiet at an event boundary: pings expected
    upstream.push("data: second\n\n");
    upstream.end();
    const text = await done;
    expect(text.startsWith('event: message\ndata: {"a":1}\n\n')).toBe(true);
    expect(text).toContain(": ping\n");
    expect(events(text)).toEqual([
      { event: "message", data: '{"a":1}', id: undefined },
      { event: undefined, data: "second", id: undefined },
    ]);
  });

  test("closing the live streams ends the relay cleanly", async () => {
    const live = new LiveStreams();
    const upstream = manualUpstream();
    const relayed = relaySse(upstream.stream, { live, pingIntervalMs: 1000 });
    const done = readAll(relayed);
    upstream.push("data: one\n\n");
    await Bun.sleep(10);
    expect(live.size).toBe(1);
    live.closeAll();
    expect(await done).toBe("data: one\n\n");
  });
});

describe("endpoint event rewrite", () => {
  const rewrite = () => endpointEventRewriter((endpoint) => `/prefix${endpoint}`);

  test("works when the event arrives split across chunks, after a comment", async () => {
    const upstream = manualUpstream();
    const done = readAll(relaySse(upstream.stream, { head: rewrite() }));
    upstream.push(": hello\n\nevent: endp");
    upstream.push("oint\ndata: /messages?sessionId=1");
    upstream.push("\n\nevent: message\ndata: {}\n\n");
    upstream.end();
    const parsed = events(await done);
    expect(parsed[0]).toEqual({ event: "endpoint", data: "/prefix/messages?sessionId=1", id: undefined });
    expect(parsed[1]).toEqual({ event: "message", data: "{}", id: undefined });
  });

  test("a stream that does not start with an endpoint event passes through byte for byte", async () => {
    const upstream = manualUpstream();
    const done = readAll(relaySse(upstream.stream, { head: rewrite() }));
    const original = 'id: 7\r\ndata: {"jsonrpc":"2.0"}\r\n\r\nevent: endpoint\ndata: /late\n\n';
    upstream.push(original);
    upstream.end();
    expect(await done).toBe(original);
  });

  test("a refused endpoint: an error event instead, nothing after it, and the upstream let go", async () => {
    let cancelled = false;
    let upstreamController!: ReadableStreamDefaultController<Uint8Array>;
    const upstream = new ReadableStream<Uint8Array>({
      start: (c) => void (upstreamController = c),
      cancel: () => void (cancelled = true),
    });
    const head = endpointEventRewriter(() => ({ refused: "not here" }));
    const done = readAll(relaySse(upstream, { head }));
    upstreamController.enqueue(encode("event: endpoint\ndata: https://elsewhere/x\n\nevent: message\ndata: {}\n\n"));
    // The upstream is never ended by hand: the relay ends by itself (bounded, so a hang fails here).
    const text = await Promise.race([done, Bun.sleep(3_000).then(() => "still open")]);
    expect(events(text)).toEqual([{ event: "error", data: "not here", id: undefined }]);
    expect(cancelled).toBe(true);
  });
});

describe("a POST's stream never ends without a word", () => {
  const request = (ids: (string | number)[]) =>
    new TextEncoder().encode(
      JSON.stringify(ids.map((id) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "x" } }))),
    );
  const messages = (text: string) =>
    events(text)
      .filter((e) => e.event === "message")
      .map((e) => JSON.parse(e.data) as { id?: unknown; method?: string; error?: { code: number; message: string } });

  test("the upstream breaking mid-event: the fragment is discarded, each unanswered request gets an error", async () => {
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const upstream = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
    const relayed = relaySse(upstream, {
      answers: new PendingAnswers(() => requestIdsOf(request([5, "b", 6])), { maxEventBytes: 1 << 20 }),
    });
    const done = readAll(relayed);
    controller.enqueue(encode('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n'));
    controller.enqueue(encode('event: message\ndata: {"jsonrpc":"2.0","id":"b","result":{}}\n\n'));
    controller.enqueue(encode('event: message\ndata: {"jsonrpc":"2.0","id":5,"res'));
    await Bun.sleep(10);
    controller.error(new Error("connection reset"));
    const text = await done; // a clean end, not an error
    const relayedMessages = messages(text);
    expect(relayedMessages.map((m) => [m.id, m.method, m.error?.code])).toEqual([
      [undefined, "notifications/progress", undefined],
      ["b", undefined, undefined],
      [5, undefined, -32603],
      [6, undefined, -32603],
    ]);
    expect(relayedMessages[2]?.error?.message).toContain("broke");
    // The cut event went out under a type no client listens to.
    expect(events(text).some((e) => e.event === "mcpmgr-discarded" && e.data.startsWith('{"jsonrpc"'))).toBe(true);
  });

  test("a graceful stop waits for it, then ends what it still owes with an error event", async () => {
    const live = new LiveStreams();
    const upstream = manualUpstream();
    const relayed = relaySse(upstream.stream, {
      live,
      answers: new PendingAnswers(() => requestIdsOf(request([1, 2])), { maxEventBytes: 1 << 20 }),
    });
    const done = readAll(relayed);
    upstream.push('event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n');
    await Bun.sleep(10);
    // Request-scoped: graceful stop waits for it (it is not counted among the standalone streams).
    expect(live.size).toBe(0);
    live.closeAll("mcpmgr is shutting down");
    const owed = messages(await done);
    expect(owed.map((m) => [m.id, m.error?.message])).toEqual([
      [1, undefined],
      [2, "mcpmgr is shutting down"],
    ]);
  });

  test("a GET stream broken mid-way ends cleanly, with nothing invented", async () => {
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const upstream = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
    const done = readAll(relaySse(upstream));
    controller.enqueue(encode("data: one\n\n"));
    await Bun.sleep(10);
    controller.error(new Error("connection reset"));
    expect(await done).toBe("data: one\n\n");
  });
});
