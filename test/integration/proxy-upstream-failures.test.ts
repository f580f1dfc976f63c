/**
 * `mcpmgr proxy` in front of upstreams that misbehave on the wire (a raw HTTP/1.1 server
 * writing exactly the bytes each test chooses): the client always gets an HTTP answer with a
 * JSON-RPC error, never a reset connection or a 500; how long the proxy waits for an
 * upstream's first byte is MCPMGR_UPSTREAM_HEADERS_TIMEOUT.
 */
import { expect, test, setDefaultTimeout } from "bun:test";
import { startProxy } from "../support/processes.ts";
import { rawServer } from "../support/raw-http.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const call = (url: string, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
  }).then(
    async (response) => ({ status: response.status, text: await response.text().catch((err) => `broken: ${err}`) }),
    (err: unknown) => ({ status: 0, text: `no answer: ${err}` }),
  );

test("MCPMGR_UPSTREAM_HEADERS_TIMEOUT: an upstream that never answers gets 504 after that long", async () => {
  await using silent = rawServer(() => {});
  const proxy = await startProxy(`${silent.url}/mcp`, [], { env: { MCPMGR_UPSTREAM_HEADERS_TIMEOUT: "1s" } });
  try {
    const started = performance.now();
    const answer = await call(proxy.url);
    expect(answer.status).toBe(504);
    expect(JSON.parse(answer.text).error.code).toBe(-32603);
    expect(performance.now() - started).toBeLessThan(10_000);
  } finally {
    await proxy.stop();
  }
}, 30_000);

test("a bad MCPMGR_UPSTREAM_HEADERS_TIMEOUT is a start-up error", async () => {
  const failed = await startProxy("http://127.0.0.1:9/mcp", [], {
    env: { MCPMGR_UPSTREAM_HEADERS_TIMEOUT: "soon" },
  }).then(
    async (proxy) => {
      await proxy.stop();
      return "";
    },
    (err: unknown) => String(err),
  );
  expect(failed).toContain("MCPMGR_UPSTREAM_HEADERS_TIMEOUT");
});

test("an answer that breaks after its head (a broken chunk, a cut body) is a 502 with a JSON-RPC error", async () => {
  const answers = [
    // The head, then a chunk whose size line is not hex.
    (socket: { write(text: string): unknown; end(): unknown }) => {
      socket.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
      setTimeout(() => socket.write("zz\r\nbroken\r\n"), 100);
    },
    // A valid first chunk, then the connection closes.
    (socket: { write(text: string): unknown; end(): unknown }) => {
      socket.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
      setTimeout(() => socket.write('5\r\n{"jso\r\n'), 50);
      setTimeout(() => socket.end(), 150);
    },
  ];
  for (const [i, answer] of answers.entries()) {
    await using upstream = rawServer((connection) => answer(connection.socket));
    const proxy = await startProxy(`${upstream.url}/mcp`);
    try {
      const response = await call(proxy.url);
      expect({ i, status: response.status }).toEqual({ i, status: 502 });
      expect(JSON.parse(response.text).error.message).toContain("broke off");
    } finally {
      await proxy.stop();
    }
  }
}, 30_000);

test("a long chunked answer still streams through whole", async () => {
  const big = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { text: "x".repeat(3 * 1024 * 1024) } });
  await using upstream = rawServer((connection) => {
    connection.socket.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (let at = 0; at < big.length; at += 256 * 1024) {
      const piece = big.slice(at, at + 256 * 1024);
      connection.socket.write(`${piece.length.toString(16)}\r\n${piece}\r\n`);
    }
    connection.socket.write("0\r\n\r\n");
  });
  const proxy = await startProxy(`${upstream.url}/mcp`);
  try {
    const response = await call(proxy.url);
    expect(response.status).toBe(200);
    expect(response.text.length).toBe(big.length);
  } finally {
    await proxy.stop();
  }
}, 30_000);
