/**
 * mcpmgr's upstream HTTP/1.1 client against real sockets: well-behaved servers (Bun.serve)
 * and raw ones that misbehave on purpose (split packets, early closes, huge heads, endless
 * streams, closing reused connections).
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { UpstreamInit } from "../../src/proxy/authenticated-fetch.ts";
import { createUpstreamClient, type UpstreamClientOptions } from "../../src/proxy/upstream/client.ts";
import { UpstreamError } from "../../src/proxy/upstream/errors.ts";
import type { ConnectionPeer } from "../../src/proxy/upstream/types.ts";
import { eventually, type RawConnection, rawServer } from "../support/raw-http.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const post = (body: UpstreamInit["body"], extra: Partial<UpstreamInit> = {}): UpstreamInit => ({
  method: "POST",
  body,
  redirect: "manual",
  headers: { "content-type": "application/json" },
  ...extra,
});
const get = (extra: Partial<UpstreamInit> = {}): UpstreamInit => ({ method: "GET", redirect: "manual", ...extra });

function client(options: UpstreamClientOptions = {}) {
  return createUpstreamClient({ env: {}, ...options });
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

const ok = (c: RawConnection, body = "ok", extra = "") =>
  c.socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n${extra}\r\n${body}`);

describe("requests", () => {
  test("keep-alive: consecutive requests share one connection; Host and framing are the client's own", async () => {
    await using server = rawServer((c) => ok(c));
    const { fetch, close } = client();
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${server.url}/mcp?x=${i}#frag`, {
        ...post(`{"id":${i}}`),
        headers: { "content-length": "999", "transfer-encoding": "gzip", connection: "close", "x-kept": "yes" },
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("ok");
    }
    close();
    expect(server.connections.length).toBe(1);
    const [first] = server.requests;
    expect(first?.target).toBe("/mcp?x=0");
    expect(first?.headers.host).toBe(`127.0.0.1:${server.port}`);
    expect(first?.headers["content-length"]).toBe(String('{"id":0}'.length));
    expect(first?.headers["transfer-encoding"]).toBeUndefined();
    expect(first?.headers.connection).toBeUndefined();
    expect(first?.headers["x-kept"]).toBe("yes");
    expect(first?.headers["accept-encoding"]).toBeUndefined();
    expect(first?.body).toBe('{"id":0}');
  });

  test("headers as pairs (the forwarder's form) are sent as given; a value with CR/LF is refused, not sent", async () => {
    await using server = rawServer((c) => ok(c));
    const { fetch } = client();
    const res = await fetch(`${server.url}/`, {
      ...get(),
      headers: [
        ["x-one", "1"],
        ["X-Two", "2"],
      ],
    });
    expect(await res.text()).toBe("ok");
    expect(server.requests[0]?.headers["x-one"]).toBe("1");
    expect(server.requests[0]?.headers["x-two"]).toBe("2");
    const injected = await rejection(fetch(`${server.url}/`, { ...get(), headers: [["x-a", "1\r\nx-injected: yes"]] }));
    expect(injected).toBeInstanceOf(TypeError);
    expect(server.requests.length).toBe(1);
  });

  test("bodies: bytes with Content-Length, streams chunked; the server gets every byte", async () => {
    const upstream = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const bytes = new Uint8Array(await req.arrayBuffer());
        return Response.json({
          length: bytes.length,
          hash: Bun.hash(bytes).toString(),
          te: req.headers.get("transfer-encoding"),
          cl: req.headers.get("content-length"),
        });
      },
    });
    try {
      const { fetch, close } = client();
      const big = new Uint8Array(300 * 1024).map((_, i) => i % 251);
      const small = await (await fetch(`http://127.0.0.1:${upstream.port}/`, post(big.subarray(0, 100)))).json();
      expect(small).toEqual({ length: 100, hash: Bun.hash(big.subarray(0, 100)).toString(), te: null, cl: "100" });
      const whole = await (await fetch(`http://127.0.0.1:${upstream.port}/`, post(big.buffer))).json();
      expect(whole).toMatchObject({ length: big.length, hash: Bun.hash(big).toString(), cl: String(big.length) });
      const pieces = [big.subarray(0, 10), new Uint8Array(0), big.subarray(10, 200_000), big.subarray(200_000)];
      const stream = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const next = pieces.shift();
          if (next === undefined) controller.close();
          else {
            await Bun.sleep(1);
            controller.enqueue(next);
          }
        },
      });
      const streamed = await (
        await fetch(`http://127.0.0.1:${upstream.port}/`, post(stream, { duplex: "half" }))
      ).json();
      expect(streamed).toEqual({ length: big.length, hash: Bun.hash(big).toString(), te: "chunked", cl: null });
      close();
    } finally {
      await upstream.stop(true);
    }
  });

  test("HEAD and 205 answers have no body and the connection is reused; 1xx answers are skipped", async () => {
    await using server = rawServer((c, request) => {
      if (request.method === "HEAD") c.socket.write("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n");
      else if (request.target === "/reset")
        c.socket.write("HTTP/1.1 205 Reset Content\r\nContent-Length: 3\r\n\r\nabc");
      else c.socket.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone");
    });
    const { fetch, close } = client();
    const head = await fetch(`${server.url}/`, { method: "HEAD", redirect: "manual" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe("1234");
    expect(await head.text()).toBe("");
    const created = await fetch(`${server.url}/`, post("{}"));
    expect(created.status).toBe(201);
    expect(created.statusText).toBe("Created");
    expect(await created.text()).toBe("done");
    // A body where none may be: read (the connection stays in step) and dropped.
    const reset = await fetch(`${server.url}/reset`, post("{}"));
    expect(reset.status).toBe(205);
    expect(await reset.text()).toBe("");
    expect(await (await fetch(`${server.url}/`, post("{}"))).text()).toBe("done");
    close();
    expect(server.connections.length).toBe(1);
  });
});

describe("responses", () => {
  test("a chunked answer with extensions, split across many packets, arrives whole", async () => {
    const event = 'event: message\ndata: {"jsonrpc":"2.0","x":1}\n\n';
    const wire =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
      `${(15).toString(16)};ext=1\r\n${event.slice(0, 15)}\r\n` +
      `${(event.length - 17).toString(16)} ; a=b\r\n${event.slice(15, -2)}\r\n` +
      "2\r\n\n\n\r\n0\r\nTrailer: t\r\n\r\n";
    await using server = rawServer(async (c) => {
      for (let i = 0; i < wire.length; i += 5) {
        c.socket.write(wire.slice(i, i + 5));
        await Bun.sleep(1);
      }
    });
    const { fetch, close } = client();
    const res = await fetch(`${server.url}/`, get());
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(await res.text()).toBe(event);
    // Complete and keep-alive: the next request goes out on the same connection.
    await fetch(`${server.url}/`, get()).then((r) => r.text());
    close();
    expect(server.connections.length).toBe(1);
  });

  test("a body cut short is an error, never a shorter body", async () => {
    await using server = rawServer(async (c, request) => {
      if (request.target === "/length") c.socket.write("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\npartial");
      else c.socket.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nonly half");
      await Bun.sleep(20);
      c.socket.end();
    });
    const { fetch } = client();
    for (const path of ["/length", "/chunked"]) {
      const res = await fetch(`${server.url}${path}`, get());
      expect(res.status).toBe(200);
      const err = await rejection(res.text());
      expect((err as UpstreamError).code).toBe("UPSTREAM_BODY_INCOMPLETE");
    }
  });

  test("an answer without a length runs until the upstream closes; that connection is not reused", async () => {
    await using server = rawServer((c) => {
      c.socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end");
      c.socket.end();
    });
    const { fetch } = client();
    expect(await (await fetch(`${server.url}/`, get())).text()).toBe("until the end");
    expect(await (await fetch(`${server.url}/`, get())).text()).toBe("until the end");
    expect(server.connections.length).toBe(2);
  });

  test("hostile answers: huge heads and broken syntax are clean errors, and the connection is dropped", async () => {
    await using server = rawServer((c, request) => {
      if (request.target === "/huge") c.socket.write(`HTTP/1.1 200 OK\r\nX-Big: ${"a".repeat(100_000)}\r\n\r\n`);
      else if (request.target === "/smuggle")
        c.socket.write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
      else if (request.target === "/extra")
        c.socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200");
      else ok(c);
    });
    const { fetch } = client();
    const huge = await rejection(fetch(`${server.url}/huge`, get()));
    expect((huge as UpstreamError).code).toBe("UPSTREAM_HEAD_TOO_LARGE");
    const smuggle = await rejection(fetch(`${server.url}/smuggle`, get()));
    expect((smuggle as UpstreamError).code).toBe("UPSTREAM_BAD_RESPONSE");
    await eventually(() => server.connections.slice(0, 2).every((c) => c.closed), 5_000, "bad connections closed");
    // Bytes after a complete answer: the answer is fine, the connection is not trusted again.
    expect(await (await fetch(`${server.url}/extra`, get())).text()).toBe("ok");
    await eventually(() => server.connections[2]?.closed === true, 5_000, "connection with extra bytes closed");
    expect(await (await fetch(`${server.url}/`, get())).text()).toBe("ok");
    expect(server.connections.length).toBe(4);
  });

  test("a slow reader slows the upstream: an endless stream is not buffered without bound", async () => {
    const piece = Buffer.alloc(64 * 1024, 0x61);
    const frame = Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n")]);
    const frames = 768; // 48 MiB of body
    const wire = frames * frame.length;
    let sent = 0;
    /** Consecutive attempts to write that found the socket still full. */
    let refused = 0;
    const pump = (c: RawConnection) => {
      while (sent < wire) {
        const offset = sent % frame.length;
        const written = Math.max(0, c.socket.write(frame, offset, frame.length - offset));
        sent += written;
        if (written < frame.length - offset) {
          // The kernel buffers are full: try again shortly, counting the refusals in a row.
          refused = written === 0 ? refused + 1 : 0;
          setTimeout(() => pump(c), 5);
          return;
        }
        refused = 0;
      }
      c.socket.write("0\r\n\r\n");
    };
    await using server = rawServer((c) => {
      c.socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
      pump(c);
    });
    const { fetch } = client();
    const res = await fetch(`${server.url}/`, get());
    // Nobody reads: either the upstream is held back for good, or (without backpressure) it sends it all.
    await eventually(() => refused >= 40 || sent >= wire, 20_000, "the upstream to be held back or done");
    // Kernel socket buffers on loopback hold a few MiB; the client itself keeps ~64 KiB.
    expect(sent).toBeLessThan(wire / 4);
    let received = 0;
    for await (const chunk of res.body as ReadableStream<Uint8Array>) received += chunk.byteLength;
    expect(received).toBe(frames * piece.length);
  });
});

describe("cancellation and retries", () => {
  test("an abort while waiting for the answer rejects with its reason and closes the connection", async () => {
    await using server = rawServer(() => {});
    const { fetch } = client();
    const abort = new AbortController();
    const pending = fetch(`${server.url}/`, post("{}", { signal: abort.signal }));
    await eventually(() => server.requests.length === 1, 5_000, "the request to arrive");
    const reason = new Error("client went away");
    abort.abort(reason);
    expect(await rejection(pending)).toBe(reason);
    await eventually(() => server.connections[0]?.closed === true, 5_000, "the upstream to see the close");
  });

  test("cancelling a streamed body closes the connection (the upstream sees the client leave)", async () => {
    await using server = rawServer((c) => {
      c.socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
      c.socket.write("7\r\ndata: 1\r\n");
    });
    const { fetch } = client();
    const res = await fetch(`${server.url}/`, get());
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("data: 1");
    await reader.cancel();
    await eventually(() => server.connections[0]?.closed === true, 5_000, "the upstream to see the close");
  });

  test("a reused connection closed unanswered: GET is sent again on a fresh one, POST is not", async () => {
    // Each connection answers its first request and drops the second unanswered, as an
    // upstream closing an idle keep-alive connection just as a request arrives would.
    const dropSecond = (c: RawConnection) => {
      if (c.requests.length === 1) ok(c);
      else c.socket.end();
    };
    await using gets = rawServer(dropSecond);
    const { fetch } = client();
    expect(await (await fetch(`${gets.url}/`, get())).text()).toBe("ok");
    expect(await (await fetch(`${gets.url}/`, get())).text()).toBe("ok");
    expect(gets.requests.length).toBe(3);
    expect(gets.connections.length).toBe(2);

    await using posts = rawServer(dropSecond);
    expect(await (await fetch(`${posts.url}/`, post("{}"))).text()).toBe("ok");
    const err = await rejection(fetch(`${posts.url}/`, post("{}")));
    expect((err as UpstreamError).code).toBe("UPSTREAM_CLOSED");
    expect(posts.requests.length).toBe(2);
  });

  test("never sent again once the answer has begun", async () => {
    await using server = rawServer((c) => {
      if (c.requests.length === 1) ok(c);
      else {
        c.socket.write("HTTP/1.1 200 OK\r\nContent-");
        c.socket.end();
      }
    });
    const { fetch } = client();
    await (await fetch(`${server.url}/`, get())).text();
    const err = await rejection(fetch(`${server.url}/`, get()));
    expect(err).toBeInstanceOf(UpstreamError);
    expect(server.requests.length).toBe(2);
  });
});

describe("the pool", () => {
  test("idle connections close after the idle timeout, sooner when the upstream announces a shorter one", async () => {
    await using plain = rawServer((c) => ok(c));
    await using announced = rawServer((c) => ok(c, "ok", "Keep-Alive: timeout=1\r\n"));
    const quick = client({ idleTimeoutMs: 300 });
    await (await quick.fetch(`${plain.url}/`, get())).text();
    await eventually(() => plain.connections[0]?.closed === true, 5_000, "the idle connection to close");
    const patient = client({ idleTimeoutMs: 60_000 });
    await (await patient.fetch(`${announced.url}/`, get())).text();
    await eventually(() => announced.connections[0]?.closed === true, 5_000, "Keep-Alive: timeout=1 to be honoured");
  });

  test("at most maxIdle connections are kept", async () => {
    await using server = rawServer(async (c) => {
      await Bun.sleep(50);
      ok(c);
    });
    const { fetch, close } = client({ maxIdlePerOrigin: 1 });
    await Promise.all([1, 2, 3].map(() => fetch(`${server.url}/`, get()).then((r) => r.text())));
    expect(server.connections.length).toBe(3);
    await eventually(() => server.connections.filter((c) => c.closed).length === 2, 5_000, "two to close");
    close();
    await eventually(() => server.connections.every((c) => c.closed), 5_000, "close() to close the last");
  });

  test("checkConnection: asked once per new connection before anything is written, with where it went; a refusal closes it and fails the request", async () => {
    await using server = rawServer((c) => ok(c));
    const { fetch, close } = client();
    const asked: (ConnectionPeer | undefined)[] = [];
    const checkConnection = (peer: ConnectionPeer | undefined) => {
      asked.push(peer);
    };
    for (let i = 0; i < 3; i++)
      expect(await (await fetch(`${server.url}/`, get({ checkConnection }))).text()).toBe("ok");
    // One connection, reused: checked when it opened, given the listener's address and port.
    const url = new URL(server.url);
    expect(asked).toEqual([{ address: url.hostname, port: Number(url.port) }]);
    close();
    const refused = new Error("not the port's owner any more");
    const { fetch: fresh } = client();
    const err = await rejection(
      fresh(
        `${server.url}/`,
        post('{"secret":1}', {
          checkConnection: () => {
            throw refused;
          },
        }),
      ),
    );
    expect(err).toBe(refused);
    await eventually(() => server.connections.at(-1)?.closed === true, 5_000, "the refused connection to close");
    // Nothing was written on it.
    expect(server.requests.length).toBe(3);
  });

  test("an unreachable upstream is an error with the socket's code", async () => {
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = probe.port;
    probe.stop(true);
    const err = await rejection(client().fetch(`http://127.0.0.1:${port}/`, get()));
    expect((err as { code?: string }).code).toBe("ECONNREFUSED");
  });
});

describe("what is left to fetch", () => {
  test("proxies from the environment, redirects to follow, per-request TLS options, other body kinds", async () => {
    await using server = rawServer((c) => ok(c));
    const seen: string[] = [];
    const fallback = async (url: string, init: UpstreamInit) => {
      seen.push(`${init.method ?? "GET"} ${url}`);
      return new Response("from fetch");
    };
    const direct = client({ fallback });
    expect(await (await direct.fetch(`${server.url}/a`, get())).text()).toBe("ok");
    expect(await (await direct.fetch(`${server.url}/b`, { method: "GET" })).text()).toBe("from fetch");
    expect(await (await direct.fetch(`${server.url}/c`, get({ tls: { rejectUnauthorized: false } }))).text()).toBe(
      "from fetch",
    );
    expect(await (await direct.fetch(`${server.url}/d`, post(new Blob(["x"])))).text()).toBe("from fetch");
    const proxied = client({ fallback, env: { HTTP_PROXY: "http://127.0.0.1:1", NO_PROXY: "example.com" } });
    expect(await (await proxied.fetch("http://upstream.test:8080/e", get())).text()).toBe("from fetch");
    // Loopback is never proxied: mcpmgr's own endpoints are there, which a proxy elsewhere cannot reach.
    expect(await (await proxied.fetch(`${server.url}/f`, get())).text()).toBe("ok");
    expect(seen).toEqual([
      `GET ${server.url}/b`,
      `GET ${server.url}/c`,
      `POST ${server.url}/d`,
      "GET http://upstream.test:8080/e",
    ]);
  });
});

describe("a Unix socket", () => {
  test("every origin is reached through the socket, many held streams at once, environment proxies ignored", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mcpmgr-upstream-unix-"));
    const path = join(dir, "relay.sock");
    const server = Bun.serve({
      unix: path,
      fetch(req) {
        if (new URL(req.url).pathname !== "/hold") return new Response(`host ${req.headers.get("host")}`);
        return new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode(": held\n\n")) }), {
          headers: { "content-type": "text/event-stream" },
        });
      },
    });
    const { fetch, close } = client({ unix: path, env: { HTTP_PROXY: "http://127.0.0.1:1" } });
    const aborts = new AbortController();
    try {
      // More than fetch's 256 requests at once per process: each holds its connection.
      const held = await Promise.all(
        Array.from({ length: 300 }, () => fetch("http://127.0.0.1:8000/hold", get({ signal: aborts.signal }))),
      );
      expect(held.every((response) => response.status === 200)).toBe(true);
      expect(await (await fetch("http://127.0.0.1:8000/", get())).text()).toBe("host 127.0.0.1:8000");
    } finally {
      aborts.abort();
      close();
      await server.stop(true);
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("TLS", () => {
  let scratch: string;
  const certs: Record<string, { cert: string; key: string }> = {};

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), "mcpmgr-upstream-tls-"));
    for (const [name, san] of [
      ["ip", "IP:127.0.0.1"],
      ["localhost", "DNS:localhost"],
      ["other", "DNS:other.example"],
    ] as const) {
      const made = Bun.spawnSync(
        [
          "openssl",
          "req",
          "-x509",
          "-newkey",
          "rsa:2048",
          "-nodes",
          "-days",
          "1",
          "-subj",
          `/CN=${name}`,
          "-addext",
          `subjectAltName=${san}`,
          "-keyout",
          join(scratch, `${name}.key`),
          "-out",
          join(scratch, `${name}.pem`),
        ],
        { stderr: "pipe" },
      );
      expect(made.exitCode).toBe(0);
      certs[name] = {
        cert: await readFile(join(scratch, `${name}.pem`), "utf8"),
        key: await readFile(join(scratch, `${name}.key`), "utf8"),
      };
    }
  });
  afterAll(() => rm(scratch, { recursive: true, force: true }));

  function tlsServer(name: string) {
    return Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: certs[name] as { cert: string; key: string },
      fetch: (req) => new Response(`secure ${new URL(req.url).pathname}`),
    });
  }

  test("trusted CAs: the configured ones are added to the roots; names and addresses are checked", async () => {
    const ip = tlsServer("ip");
    const named = tlsServer("localhost");
    const other = tlsServer("other");
    try {
      const ca = `${certs.ip?.cert}\n${certs.localhost?.cert}\n${certs.other?.cert}`;
      const trusting = client({ ca });
      expect(await (await trusting.fetch(`https://127.0.0.1:${ip.port}/x`, get())).text()).toBe("secure /x");
      expect(await (await trusting.fetch(`https://localhost:${named.port}/y`, get())).text()).toBe("secure /y");
      // A trusted certificate for another name.
      const misnamed = await rejection(trusting.fetch(`https://127.0.0.1:${other.port}/`, get()));
      expect(misnamed).toBeInstanceOf(UpstreamError);
      expect(String((misnamed as Error).message)).toContain("TLS");
      // An untrusted certificate.
      const untrusted = await rejection(client().fetch(`https://127.0.0.1:${ip.port}/`, get()));
      expect(untrusted).toBeInstanceOf(UpstreamError);
      // NODE_TLS_REJECT_UNAUTHORIZED=0 turns verification off, as it does for fetch.
      const lax = client({ env: { NODE_TLS_REJECT_UNAUTHORIZED: "0" } });
      expect(await (await lax.fetch(`https://127.0.0.1:${ip.port}/z`, get())).text()).toBe("secure /z");
      trusting.close();
      lax.close();
    } finally {
      await Promise.all([ip.stop(true), named.stop(true), other.stop(true)]);
    }
  });
});
