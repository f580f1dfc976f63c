/** The bound on one answer held from a server (src/proxy/answer-limit.ts), on real web streams. */
import { expect, test } from "bun:test";
import { AnswerTooLarge, boundedFetch, readBoundedText, readExcerpt } from "../../src/proxy/answer-limit.ts";
import { excerpt } from "../../src/printable.ts";

const encoder = new TextEncoder();

/** A body in `chunks`, without a Content-Length; `pulled` counts the chunks read from it. */
function chunked(chunks: string[]): { body: ReadableStream<Uint8Array>; pulled: () => number } {
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const chunk = chunks[next++];
      if (chunk === undefined) controller.close();
      else controller.enqueue(encoder.encode(chunk));
    },
  });
  return { body, pulled: () => next };
}

test("a body within the bound is read whole; past it (declared or counted) it is refused without reading on", async () => {
  expect(await readBoundedText(new Response("x".repeat(100)), 100)).toHaveLength(100);
  await expect(readBoundedText(new Response("x".repeat(101)), 100)).rejects.toBeInstanceOf(AnswerTooLarge);
  const { body, pulled } = chunked(Array.from({ length: 50 }, () => "y".repeat(40)));
  const error = await readBoundedText(new Response(body), 100).catch((err: unknown) => err);
  expect(error).toBeInstanceOf(AnswerTooLarge);
  expect((error as Error).message).toContain("raise MCPMGR_MAX_MESSAGE_BYTES");
  // Stopped at the third chunk (120 bytes > 100), not read to the end.
  expect(pulled()).toBeLessThan(5);
});

test("an error page is read only as far as its excerpt", async () => {
  const { body, pulled } = chunked(Array.from({ length: 50 }, () => "E\n".repeat(100)));
  expect(await readExcerpt(new Response(body), 150)).toHaveLength(150);
  expect(pulled()).toBeLessThan(5);
  expect(excerpt("a\nb\r\nc", 10)).toBe("a\\nb\\nc");
  expect(excerpt("z".repeat(300), 200)).toBe(`${"z".repeat(200)}…`);
});

test("a bounded fetch cuts an SSE event past the bound and answers the POST's request with the limit's error", async () => {
  const exceeded: string[] = [];
  const upstream = async () =>
    new Response(chunked(['event: message\ndata: {"small":1}\n\n', 'data: "', "A".repeat(80), "A".repeat(80)]).body, {
      headers: { "content-type": "text/event-stream" },
    });
  const fetch = boundedFetch(upstream, { maxBytes: 100, onExceeded: (text) => exceeded.push(text) });
  const response = await fetch("http://member.invalid/mcp", {
    method: "POST",
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "giant" } }),
  });
  const text = await response.text();
  // The whole event before it passes; the cut one ends under a type no client reads; then the error.
  expect(text.startsWith('event: message\ndata: {"small":1}\n\n')).toBe(true);
  expect(text).toContain("event: mcpmgr-discarded\n\n");
  const last = text.trimEnd().split("\n").at(-1) as string;
  const error = JSON.parse(last.replace(/^data: /, "")) as { id: number; error: { code: number; message: string } };
  expect(error.id).toBe(7);
  expect(error.error.code).toBe(-32603);
  expect(error.error.message).toContain("MCPMGR_MAX_MESSAGE_BYTES");
  expect(exceeded).toHaveLength(1);
});

test("whole events in the chunk where an event passes the bound still reach the client; only then the error", async () => {
  // Review 11 O3: the whole chunk was held back, so a log line (or another request's answer) written
  // with the oversized event never arrived.
  for (const ending of ["\n", "\r\n"]) {
    const log = `event: message${ending}data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"before"}}${ending}${ending}`;
    const upstream = async () =>
      new Response(chunked([`${log}event: message${ending}data: "${"A".repeat(200)}`]).body, {
        headers: { "content-type": "text/event-stream" },
      });
    const fetch = boundedFetch(upstream, { maxBytes: 150 });
    const response = await fetch("http://member.invalid/mcp", {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "giant" } }),
    });
    const text = await response.text();
    // The log event as it was sent, then at once (nothing of the cut event reached the client) the error.
    expect(text.startsWith(log)).toBe(true);
    const rest = text.slice(log.length);
    expect(rest.startsWith("event: message\ndata: ")).toBe(true);
    expect(rest).not.toContain("AAAA");
    expect(rest).not.toContain("mcpmgr-discarded");
    const error = JSON.parse(rest.split("\n")[1]?.replace(/^data: /, "") ?? "") as {
      id: number;
      error: { message: string };
    };
    expect(error.id).toBe(9);
    expect(error.error.message).toContain("MCPMGR_MAX_MESSAGE_BYTES");
  }
});

test("a bounded fetch hands a JSON answer that declares a size within the bound on as it is, and fails a larger one", async () => {
  const text = '{"jsonrpc":"2.0","id":1,"result":{}}';
  const small = new Response(text, {
    headers: { "content-type": "application/json", "content-length": String(text.length) },
  });
  const fetch = boundedFetch(async () => small, { maxBytes: 100 });
  expect(await fetch("http://member.invalid/mcp", {})).toBe(small);
  const large = boundedFetch(async () => Response.json({ text: "B".repeat(200) }), { maxBytes: 100 });
  await expect((await large("http://member.invalid/mcp", {})).json()).rejects.toBeInstanceOf(AnswerTooLarge);
});

// Review 11 F2: a compressed body's Content-Length counts the compressed bytes, which fetch expands as it
// reads: 200 KiB of gzip declared "within the bound" held 200 MiB (and far more from a hostile server).
test("a gzip body whose Content-Length is within the bound is still refused once it expands past it", async () => {
  const expanded = `{${" ".repeat(4 * 1024 * 1024)}}`; // 4 MiB of JSON, a few KiB of gzip
  const gzipped = Bun.gzipSync(encoder.encode(expanded));
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () =>
      new Response(gzipped, {
        headers: {
          "content-type": "application/json",
          "content-encoding": "gzip",
          "content-length": String(gzipped.byteLength),
        },
      }),
  });
  try {
    const url = `http://127.0.0.1:${server.port}/mcp`;
    const maxBytes = 1024 * 1024;
    expect(gzipped.byteLength).toBeLessThan(maxBytes);
    await expect(readBoundedText(await fetch(url), maxBytes)).rejects.toBeInstanceOf(AnswerTooLarge);
    const bounded = boundedFetch((target: string, init?: RequestInit) => fetch(target, init), { maxBytes });
    await expect((await bounded(url, {})).text()).rejects.toBeInstanceOf(AnswerTooLarge);
    // Within the bound once expanded, it is read as before.
    expect(await readBoundedText(await fetch(url), 8 * 1024 * 1024)).toHaveLength(expanded.length);
  } finally {
    await server.stop(true);
  }
});
