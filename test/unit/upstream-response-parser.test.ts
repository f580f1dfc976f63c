/**
 * The upstream client's HTTP/1.1 response parser on its own: the same bytes give the same
 * response however they are split into packets, and every way of breaking the framing is
 * an error (never a response that looks complete but is not).
 */
import { describe, expect, test } from "bun:test";
import { Buffer } from "node:buffer";
import { UpstreamError } from "../../src/proxy/upstream/errors.ts";
import { type ResponseHead, ResponseParser } from "../../src/proxy/upstream/response-parser.ts";

interface Parsed {
  head: ResponseHead | undefined;
  body: string;
  done: boolean;
  excess: boolean;
}

/** Feeds `raw` in pieces of `split` bytes (0 = all at once), then optionally the end of the connection. */
function parse(raw: string, options: { split?: number; method?: string; eof?: boolean; maxHeadBytes?: number } = {}) {
  const out: Parsed = { head: undefined, body: "", done: false, excess: false };
  const parser = new ResponseParser(
    {
      onHead: (head) => {
        out.head = head;
      },
      onBody: (chunk) => {
        out.body += chunk.toString("latin1");
      },
    },
    options.maxHeadBytes === undefined ? {} : { maxHeadBytes: options.maxHeadBytes },
  );
  parser.expect(options.method ?? "POST");
  const bytes = Buffer.from(raw, "latin1");
  const step = options.split || bytes.length;
  for (let i = 0; i < bytes.length; i += step) parser.execute(Buffer.from(bytes.subarray(i, i + step)));
  if (options.eof) parser.finish();
  out.done = parser.done;
  out.excess = parser.excess;
  return out;
}

function failure(fn: () => unknown): UpstreamError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UpstreamError);
    return err as UpstreamError;
  }
  throw new Error("expected an UpstreamError");
}

const chunked =
  "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
  "7;name=value;flag\r\ndata: 1\r\n" +
  "A \r\n\ndata: 22\n\r\n" +
  "0\r\nX-Trailer: yes\r\n\r\n";

describe("framing", () => {
  test("a Content-Length body is the same however the bytes are split", () => {
    const raw = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"a":"bcd"}';
    for (const split of [0, 1, 2, 3, 5, 17]) {
      const r = parse(raw, { split });
      expect(r.head?.status).toBe(200);
      expect(r.head?.framing).toBe("length");
      expect(r.head?.contentLength).toBe(11);
      expect(r.body).toBe('{"a":"bcd"}');
      expect(r.done).toBe(true);
      expect(r.head?.keepAlive).toBe(true);
    }
  });

  test("chunked: extensions, whitespace before them, trailers, any packet boundaries", () => {
    for (const split of [0, 1, 2, 7, 13]) {
      const r = parse(chunked, { split });
      expect(r.head?.framing).toBe("chunked");
      expect(r.body).toBe("data: 1\ndata: 22\n");
      expect(r.done).toBe(true);
    }
  });

  test("header names keep their spelling; values lose surrounding whitespace only", () => {
    const r = parse(
      "HTTP/1.1 201 Created\r\nX-Odd-Case:  a  b \t\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 0\r\n\r\n",
    );
    expect(r.head?.statusText).toBe("Created");
    expect(r.head?.headers).toEqual([
      ["X-Odd-Case", "a  b"],
      ["Set-Cookie", "a=1"],
      ["Set-Cookie", "b=2"],
      ["Content-Length", "0"],
    ]);
    expect(r.done).toBe(true);
  });

  test("interim 1xx answers are skipped; the final one counts", () => {
    const r = parse(
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
      {
        split: 4,
      },
    );
    expect(r.head?.status).toBe(200);
    expect(r.head?.headers).toEqual([["Content-Length", "2"]]);
    expect(r.body).toBe("ok");
  });

  test("HEAD, 204 and 304 answers have no body whatever their headers say", () => {
    const head = parse("HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n", { method: "HEAD" });
    expect(head.done).toBe(true);
    expect(head.head?.framing).toBe("none");
    expect(parse("HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n").done).toBe(true);
    expect(parse("HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n").done).toBe(true);
  });

  test("without a length the body runs until the connection closes, which is then not reusable", () => {
    const r = parse("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it", { split: 3, eof: true });
    expect(r.head?.framing).toBe("close");
    expect(r.head?.keepAlive).toBe(false);
    expect(r.body).toBe("all of it");
    expect(r.done).toBe(true);
  });

  test("keep-alive: Connection: close, HTTP/1.0 defaults, and the upstream's Keep-Alive timeout", () => {
    expect(parse("HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n").head?.keepAlive).toBe(false);
    expect(parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").head?.keepAlive).toBe(false);
    const kept = parse(
      "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5, max=100\r\nContent-Length: 0\r\n\r\n",
    );
    expect(kept.head?.keepAlive).toBe(true);
    expect(kept.head?.keepAliveTimeoutMs).toBe(5000);
  });

  test("bytes after a complete response are flagged (the connection cannot be trusted)", () => {
    const r = parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n");
    expect(r.body).toBe("ok");
    expect(r.excess).toBe(true);
  });
});

describe("errors", () => {
  const bad = (raw: string, code = "UPSTREAM_BAD_RESPONSE") =>
    expect(failure(() => parse(raw, { eof: true })).code).toBe(code);

  test("malformed status lines and codes", () => {
    bad("HTTP/2 200 OK\r\n\r\n");
    bad("HTTP/1.1 20 OK\r\n\r\n");
    bad("HTTP/1.1 2x0 OK\r\n\r\n");
    bad("HTTP/1.1 200OK\r\n\r\n");
    bad("ICY 200 OK\r\n\r\n");
    bad("HTTP/1.1 700 Weird\r\nContent-Length: 0\r\n\r\n");
    bad("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n");
  });

  test("header syntax that lets one response be read as another", () => {
    bad("HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 0\r\n\r\n"); // obs-fold
    bad("HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n"); // space before the colon
    bad("HTTP/1.1 200 OK\r\nX-A: 1\nContent-Length: 5\r\n\r\nhello"); // bare LF
    bad("HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 0\r\n\r\n"); // bare CR
    bad("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n");
    bad("HTTP/1.1 200 OK\r\nX-A: nul\0byte\r\nContent-Length: 0\r\n\r\n");
  });

  test("ambiguous framing (RFC 9112 §6.3)", () => {
    bad("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
    bad("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd");
    bad("HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabcd");
    bad("HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\nabc");
    bad("HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n");
    bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
    bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n");
    // The same length repeated is one length.
    expect(parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok").body).toBe("ok");
  });

  test("malformed chunked bodies", () => {
    const head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    bad(`${head}zz\r\nab\r\n0\r\n\r\n`); // not hex
    bad(`${head}\r\n`); // no size at all
    bad(`${head}2\r\nabc\r\n0\r\n\r\n`); // data longer than its size
    bad(`${head}2\nab\r\n0\r\n\r\n`); // size line ended by a bare LF
    bad(`${head}2 x\r\nab\r\n0\r\n\r\n`); // junk after the size
    bad(`${head}${"f".repeat(20)}\r\n`); // absurd size
    bad(`${head}2;${"e".repeat(5000)}\r\nab\r\n0\r\n\r\n`); // endless extension
  });

  test("a head over the limit", () => {
    const err = failure(() =>
      parse(`HTTP/1.1 200 OK\r\nX-Big: ${"a".repeat(5000)}\r\n\r\n`, { maxHeadBytes: 4096, split: 100 }),
    );
    expect(err.code).toBe("UPSTREAM_HEAD_TOO_LARGE");
    // Never ending, never terminated: it fails as soon as the limit is passed.
    expect(failure(() => parse(`HTTP/1.1 200 OK\r\n${"X-A: 1\r\n".repeat(1000)}`, { maxHeadBytes: 4096 })).code).toBe(
      "UPSTREAM_HEAD_TOO_LARGE",
    );
  });

  test("a connection that ends early is an error, never a shorter body", () => {
    expect(failure(() => parse("", { eof: true })).code).toBe("UPSTREAM_CLOSED");
    expect(failure(() => parse("", { eof: true })).beforeResponse).toBe(true);
    const partialHead = failure(() => parse("HTTP/1.1 200 OK\r\nContent-", { eof: true }));
    expect(partialHead.code).toBe("UPSTREAM_CLOSED");
    expect(partialHead.beforeResponse).toBe(false);
    expect(failure(() => parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", { eof: true })).code).toBe(
      "UPSTREAM_BODY_INCOMPLETE",
    );
    expect(failure(() => parse(chunked.slice(0, chunked.length - 10), { eof: true })).code).toBe(
      "UPSTREAM_BODY_INCOMPLETE",
    );
    // The terminating chunk without the final CRLF is not the end either.
    const noFinalCrlf = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n";
    expect(failure(() => parse(noFinalCrlf, { eof: true })).code).toBe("UPSTREAM_BODY_INCOMPLETE");
  });
});
