/** Keep-alive comments and the endpoint rewrite, on streams we control byte by byte. */
import { describe, expect, test } from "bun:test";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { LiveStreams } from "../../src/proxy/live-streams.ts";
import { endpointEventRewriter } from "../../src/proxy/sse-endpoint.ts";
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
});
