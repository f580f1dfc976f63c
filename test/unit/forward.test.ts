/**
 * The transparent forwarder, called as a web-standard handler (no proxy socket),
 * against a real upstream HTTP server on loopback that reports what it received.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { forwardedNames } from "../../src/middleware/host-names.ts";
import { transparentForwarder } from "../../src/proxy/forward.ts";
import { detachedContext } from "../../src/proxy/handler.ts";
import { LiveStreams } from "../../src/proxy/live-streams.ts";
import { serve } from "../../src/proxy/serve.ts";
import { freePort } from "../support/processes.ts";
import { eventually, rawServer } from "../support/raw-http.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

interface Seen {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

let upstream: ReturnType<typeof Bun.serve>;
let base: string;

beforeAll(() => {
  upstream = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === "/legacy/sse") {
        return new Response(
          `event: endpoint\ndata: ${url.searchParams.get("absolute") ? `http://${url.host}` : ""}/legacy/message?sessionId=abc\n\nevent: message\ndata: {"jsonrpc":"2.0","method":"x"}\n\n`,
          { headers: { "content-type": "text/event-stream" } },
        );
      }
      if (url.pathname === "/unknown-session-400") {
        return Response.json(
          { jsonrpc: "2.0", id: null, error: { code: -32000, message: "Bad Request: No valid session ID provided" } },
          { status: 400 },
        );
      }
      if (url.pathname === "/plain-400") return Response.json({ error: "bad params" }, { status: 400 });
      if (url.pathname === "/gone") return new Response("not here", { status: 404 });
      if (url.pathname === "/gzip") {
        return new Response(Bun.gzipSync('{"jsonrpc":"2.0","id":1,"result":{}}'), {
          headers: { "content-type": "application/json", "content-encoding": "gzip" },
        });
      }
      if (url.pathname === "/hop") {
        return new Response("ok", {
          headers: {
            connection: "x-secret-hop",
            "x-secret-hop": "1",
            "keep-alive": "timeout=5",
            "mcp-session-id": "s-1",
          },
        });
      }
      const seen: Seen = {
        method: req.method,
        url: req.url,
        headers: Object.fromEntries(req.headers),
        body: await req.text(),
      };
      return Response.json(seen);
    },
  });
  base = `http://127.0.0.1:${upstream.port}`;
});

afterAll(() => upstream.stop(true));

function forwarder(target: string, extra: Partial<Parameters<typeof transparentForwarder>[0]> = {}) {
  return transparentForwarder({
    target: new URL(target),
    endpointPrefix: undefined,
    trustProxyHeaders: false,
    live: new LiveStreams(),
    ...extra,
  });
}

describe("request forwarding", () => {
  test("path, query and body reach the upstream; the target's query is kept on the MCP endpoint", async () => {
    const handle = forwarder(`${base}/v1/mcp?key=abc`);
    const res = await handle(
      new Request("http://127.0.0.1:9999/v1/mcp?client=1", {
        method: "POST",
        body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
        headers: { "content-type": "application/json" },
      }),
      detachedContext("10.1.2.3"),
    );
    const seen = (await res.json()) as Seen;
    expect(seen.method).toBe("POST");
    expect(new URL(seen.url).pathname).toBe("/v1/mcp");
    expect(new URL(seen.url).search).toBe("?key=abc&client=1");
    expect(seen.body).toBe('{"jsonrpc":"2.0","id":1,"method":"ping"}');
  });

  test("other paths are forwarded as they are (legacy message endpoints)", async () => {
    const res = await forwarder(`${base}/sse`)(
      new Request("http://127.0.0.1:9999/messages?sessionId=42", { method: "POST", body: "{}" }),
      detachedContext(),
    );
    const seen = (await res.json()) as Seen;
    expect(new URL(seen.url).pathname + new URL(seen.url).search).toBe("/messages?sessionId=42");
  });

  test("hop-by-hop headers and the client's credentials never reach the upstream; X-Forwarded-* describe the client", async () => {
    const res = await forwarder(`${base}/mcp`)(
      new Request("http://127.0.0.1:9999/mcp", {
        method: "POST",
        body: "{}",
        headers: {
          authorization: "Bearer client-token",
          "proxy-authorization": "Basic eA==",
          connection: "keep-alive, x-custom-hop",
          "x-custom-hop": "1",
          te: "trailers",
          "x-forwarded-for": "6.6.6.6",
          "x-forwarded-host": "evil.example",
          forwarded: "for=6.6.6.6;host=evil.example;proto=https",
          "mcp-session-id": "sess-1",
          "mcp-protocol-version": "2025-06-18",
          host: "127.0.0.1:9999",
        },
      }),
      detachedContext("10.1.2.3"),
    );
    const seen = (await res.json()) as Seen;
    // The client's own Forwarded goes the way of its X-Forwarded-*: it cannot describe itself.
    for (const name of ["authorization", "proxy-authorization", "x-custom-hop", "te", "forwarded"])
      expect(seen.headers[name]).toBeUndefined();
    expect(seen.headers.host).toBe(`127.0.0.1:${upstream.port}`);
    expect(seen.headers["x-forwarded-for"]).toBe("10.1.2.3");
    expect(seen.headers["x-forwarded-host"]).toBe("127.0.0.1:9999");
    expect(seen.headers["x-forwarded-proto"]).toBe("http");
    expect(seen.headers["mcp-session-id"]).toBe("sess-1");
    expect(seen.headers["mcp-protocol-version"]).toBe("2025-06-18");
  });

  test("with --trust-proxy-headers the client's X-Forwarded-For chain is extended", async () => {
    const res = await forwarder(`${base}/mcp`, { trustProxyHeaders: true })(
      new Request("http://127.0.0.1:9999/mcp", {
        method: "POST",
        body: "{}",
        headers: { "x-forwarded-for": "203.0.113.9", "x-forwarded-proto": "https", forwarded: "for=203.0.113.9" },
      }),
      detachedContext("10.1.2.3"),
    );
    const seen = (await res.json()) as Seen;
    expect(seen.headers.forwarded).toBe("for=203.0.113.9");
    expect(seen.headers["x-forwarded-for"]).toBe("203.0.113.9, 10.1.2.3");
    expect(seen.headers["x-forwarded-proto"]).toBe("https");
  });

  test("a body the upstream compressed anyway passes through untouched, with its Content-Encoding", async () => {
    const res = await forwarder(`${base}/gzip`)(
      new Request("http://127.0.0.1:9999/gzip", { headers: { "accept-encoding": "gzip" } }),
      detachedContext(),
    );
    expect(res.headers.get("content-encoding")).toBe("gzip");
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(new TextDecoder().decode(Bun.gunzipSync(bytes))).toBe('{"jsonrpc":"2.0","id":1,"result":{}}');
  });

  test("hop-by-hop response headers are dropped, MCP headers kept", async () => {
    const res = await forwarder(`${base}/hop`)(new Request("http://127.0.0.1:9999/hop"), detachedContext());
    expect(res.headers.get("x-secret-hop")).toBeNull();
    expect(res.headers.get("keep-alive")).toBeNull();
    expect(res.headers.get("mcp-session-id")).toBe("s-1");
    expect(await res.text()).toBe("ok");
  });
});

describe("failures", () => {
  test("an unreachable upstream gives 502 with a JSON-RPC error body", async () => {
    const port = await freePort();
    const res = await forwarder(`http://127.0.0.1:${port}/mcp`)(
      new Request("http://127.0.0.1:9999/mcp", { method: "POST", body: "{}" }),
      detachedContext(),
    );
    expect(res.status).toBe(502);
    const body = (await res.json()) as { jsonrpc: string; error: { code: number; message: string } };
    expect(body.jsonrpc).toBe("2.0");
    expect(body.error.code).toBe(-32603);
  });

  test("an upstream that never answers gives 504 after the headers timeout, not a hang", async () => {
    const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const started = performance.now();
      const res = await forwarder(`http://127.0.0.1:${silent.port}/mcp`, { headersTimeoutMs: 300 })(
        new Request("http://127.0.0.1:9999/mcp", { method: "POST", body: "{}" }),
        detachedContext(),
      );
      expect(res.status).toBe(504);
      expect(performance.now() - started).toBeLessThan(3_000);
    } finally {
      silent.stop(true);
    }
  });

  test("a graceful stop answers a request still waiting for its upstream with 503 and a JSON-RPC error", async () => {
    await using silent = rawServer(() => {});
    const live = new LiveStreams();
    const server = serve({
      host: "127.0.0.1",
      port: 0,
      live,
      handler: forwarder(`${silent.url}/mcp`, { live }),
    });
    const pending = fetch(new URL("/mcp", server.url), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow"}}',
    });
    await eventually(() => silent.requests.length === 1, 5_000, "the request to reach the upstream");
    await server.shutdown(300);
    const res = await pending;
    expect(res.status).toBe(503);
    const body = (await res.json()) as { error: { code: number; message: string } };
    expect(body.error.code).toBe(-32603);
    expect(body.error.message).toContain("shutting down");
  });

  test("a 400 about a session whose body is cut short is a 502, whichever client fetched it", async () => {
    await using cut = rawServer((c) => {
      c.socket.write(
        'HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"error":"session',
      );
      setTimeout(() => c.socket.end(), 50);
    });
    // Bun's fetch is what reaches containers through their relay's socket.
    for (const fetcher of [undefined, (url: string, init: RequestInit) => fetch(url, init)]) {
      const res = await forwarder(`${cut.url}/mcp`, fetcher ? { fetch: fetcher } : {})(
        new Request("http://127.0.0.1:9999/mcp", { method: "POST", body: "{}", headers: { "mcp-session-id": "s-9" } }),
        detachedContext(),
      );
      expect(res.status).toBe(502);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain("broke off");
    }
  });

  test("an upstream that breaks HTTP gives 502 with a JSON-RPC error, not a mangled answer", async () => {
    await using bad = rawServer((c) =>
      c.socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\nok"),
    );
    const res = await forwarder(`${bad.url}/mcp`)(
      new Request("http://127.0.0.1:9999/mcp", { method: "POST", body: "{}" }),
      detachedContext(),
    );
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { code: number; message: string } };
    expect(body.error.code).toBe(-32603);
    expect(body.error.message).toContain("invalid response");
  });

  test("a client that leaves while waiting for the answer: the upstream connection is closed", async () => {
    await using silent = rawServer(() => {});
    const client = new AbortController();
    const pending = forwarder(`${silent.url}/mcp`)(
      new Request("http://127.0.0.1:9999/mcp", { method: "POST", body: "{}", signal: client.signal }),
      detachedContext(),
    );
    await eventually(() => silent.requests.length === 1, 5_000, "the request to reach the upstream");
    client.abort();
    expect((await pending).status).toBe(499);
    await eventually(() => silent.connections[0]?.closed === true, 5_000, "the upstream to see the close");
  });

  test("unknown sessions become 404 + -32001 (also from upstreams that say 400), and stay ended", async () => {
    const handle = forwarder(`${base}/unknown-session-400`);
    const first = await handle(
      new Request("http://127.0.0.1:9999/unknown-session-400", {
        method: "POST",
        body: "{}",
        headers: { "mcp-session-id": "old" },
      }),
      detachedContext(),
    );
    expect(first.status).toBe(404);
    expect(((await first.json()) as { error: { code: number } }).error.code).toBe(-32001);
    const again = await handle(
      new Request("http://127.0.0.1:9999/unknown-session-400", {
        method: "POST",
        body: "{}",
        headers: { "mcp-session-id": "old" },
      }),
      detachedContext(),
    );
    expect(again.status).toBe(404);

    const gone = await forwarder(`${base}/gone`)(
      new Request("http://127.0.0.1:9999/gone", { headers: { "mcp-session-id": "x" } }),
      detachedContext(),
    );
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as { error: { code: number } }).error.code).toBe(-32001);
  });

  test("a 400 that is not about the session passes through untouched", async () => {
    const res = await forwarder(`${base}/plain-400`)(
      new Request("http://127.0.0.1:9999/plain-400", {
        method: "POST",
        body: "{}",
        headers: { "mcp-session-id": "s" },
      }),
      detachedContext(),
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "bad params" });
  });

  test("after a successful DELETE the session answers 404 without asking the upstream", async () => {
    const handle = forwarder(`${base}/mcp`);
    const del = await handle(
      new Request("http://127.0.0.1:9999/mcp", { method: "DELETE", headers: { "mcp-session-id": "done" } }),
      detachedContext(),
    );
    expect(del.status).toBe(200);
    const after = await handle(
      new Request("http://127.0.0.1:9999/mcp", { method: "POST", body: "{}", headers: { "mcp-session-id": "done" } }),
      detachedContext(),
    );
    expect(after.status).toBe(404);
  });
});

describe("legacy SSE endpoint event", () => {
  const get = (handle: ReturnType<typeof forwarder>, path: string, headers: Record<string, string> = {}) =>
    Promise.resolve(handle(new Request(`http://127.0.0.1:9999${path}`, { headers }), detachedContext())).then((r) =>
      r.text(),
    );

  test("a relative endpoint stays relative and other events pass through", async () => {
    const text = await get(forwarder(`${base}/legacy/sse`), "/legacy/sse");
    expect(text).toContain("event: endpoint\ndata: /legacy/message?sessionId=abc\n\n");
    expect(text).toContain('event: message\ndata: {"jsonrpc":"2.0","method":"x"}\n\n');
  });

  test("an absolute upstream endpoint is made relative to the proxy", async () => {
    const text = await get(forwarder(`${base}/legacy/sse`), "/legacy/sse?absolute=1");
    expect(text).toContain("data: /legacy/message?sessionId=abc\n");
    expect(text).not.toContain(base);
  });

  test("--endpoint-prefix is prepended", async () => {
    const text = await get(forwarder(`${base}/legacy/sse`, { endpointPrefix: "/api/mcp" }), "/legacy/sse");
    expect(text).toContain("data: /api/mcp/legacy/message?sessionId=abc\n");
  });

  test("X-Forwarded-* are applied only with --trust-proxy-headers", async () => {
    const forwardedHeaders = {
      "x-forwarded-proto": "https",
      "x-forwarded-host": "mcp.example.com",
      "x-forwarded-port": "8443",
      "x-forwarded-prefix": "/team",
    };
    const untrusted = await get(forwarder(`${base}/legacy/sse`), "/legacy/sse", forwardedHeaders);
    expect(untrusted).toContain("data: /legacy/message?sessionId=abc\n");
    const answersTo = forwardedNames(true, "127.0.0.1", ["mcp.example.com"]);
    const trusted = await get(
      forwarder(`${base}/legacy/sse`, { trustProxyHeaders: true, answersTo }),
      "/legacy/sse",
      forwardedHeaders,
    );
    expect(trusted).toContain("data: https://mcp.example.com:8443/team/legacy/message?sessionId=abc\n");
  });

  test("a trusted X-Forwarded-Host the listener does not answer to leaves the endpoint relative", async () => {
    const answersTo = forwardedNames(true, "127.0.0.1", ["mcp.example.com"]);
    const text = await get(forwarder(`${base}/legacy/sse`, { trustProxyHeaders: true, answersTo }), "/legacy/sse", {
      "x-forwarded-proto": "https",
      "x-forwarded-host": "evil.example",
      "x-forwarded-prefix": "/team",
    });
    expect(text).toContain("data: /team/legacy/message?sessionId=abc\n");
    expect(text).not.toContain("evil.example");
  });

  test("hostile forwarded values are ignored", async () => {
    const text = await get(forwarder(`${base}/legacy/sse`, { trustProxyHeaders: true }), "/legacy/sse", {
      "x-forwarded-host": "evil.example/<script>",
      "x-forwarded-proto": "javascript",
      "x-forwarded-prefix": "//evil.example\r\n",
    });
    expect(text).toContain("data: /legacy/message?sessionId=abc\n");
  });

  test("requests under the endpoint prefix are forwarded without it", async () => {
    const res = await forwarder(`${base}/mcp`, { endpointPrefix: "/api/mcp" })(
      new Request("http://127.0.0.1:9999/api/mcp/messages?sessionId=1", { method: "POST", body: "{}" }),
      detachedContext(),
    );
    const seen = (await res.json()) as Seen;
    expect(new URL(seen.url).pathname).toBe("/messages");
  });
});

describe("sessions belong to the caller that opened them", () => {
  test("a session the upstream issues is served to its opener only, also one issued to a client still sending its old id", async () => {
    let issued = 0;
    const reached: string[] = [];
    await using issuing = {
      server: Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        async fetch(req) {
          const body = (await req.json()) as { id: number; method: string };
          reached.push(`${body.method} ${req.headers.get("mcp-session-id") ?? "-"}`);
          const headers: Record<string, string> =
            body.method === "initialize" ? { "mcp-session-id": `issued-${++issued}` } : {};
          return Response.json({ jsonrpc: "2.0", id: body.id, result: {} }, { headers });
        },
      }),
      [Symbol.asyncDispose]() {
        return this.server.stop(true);
      },
    };
    const handle = forwarder(`http://127.0.0.1:${issuing.server.port}/mcp`, {
      callerOf: (req) => req.headers.get("x-test-caller") ?? undefined,
    });
    const send = async (caller: string, method: string, session?: string) => {
      const res = await handle(
        new Request("http://127.0.0.1:9999/mcp", {
          method: "POST",
          headers: { "x-test-caller": caller, ...(session ? { "mcp-session-id": session } : {}) },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method }),
        }),
        detachedContext(),
      );
      await res.body?.cancel();
      return { status: res.status, session: res.headers.get("mcp-session-id") };
    };
    const first = await send("alice", "initialize");
    expect(first).toEqual({ status: 200, session: "issued-1" });
    expect((await send("bob", "tools/list", "issued-1")).status).toBe(404);
    expect((await send("alice", "tools/list", "issued-1")).status).toBe(200);
    // Re-initialising with the old id still sent: the new session is hers too, and only hers.
    const second = await send("alice", "initialize", "issued-1");
    expect(second).toEqual({ status: 200, session: "issued-2" });
    expect((await send("bob", "tools/list", "issued-2")).status).toBe(404);
    expect((await send("alice", "tools/list", "issued-2")).status).toBe(200);
    // A session never seen opened here is not served to anyone authenticated.
    expect((await send("alice", "tools/list", "made-elsewhere")).status).toBe(404);
    expect(reached).toEqual(["initialize -", "tools/list issued-1", "initialize issued-1", "tools/list issued-2"]);
  });

  test("legacy streams admitted together past the session limit each keep their message URL for their own caller", async () => {
    // Both GETs pass the up-front check (no session yet); the upstream announces their endpoints only once
    // both have arrived, when the table (MCPMGR_MAX_SESSIONS 1) holds the first and cannot admit the second.
    const arrived: (() => void)[] = [];
    const both = new Promise<void>((resolve) => arrived.push(resolve));
    const posted: string[] = [];
    await using legacy = {
      server: Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        idleTimeout: 0,
        fetch(req) {
          const url = new URL(req.url);
          if (req.method === "POST") {
            posted.push(url.search);
            return new Response(null, { status: 202 });
          }
          const id = arrived.length;
          arrived.push(() => {});
          if (arrived.length === 3) arrived[0]?.();
          return new Response(
            new ReadableStream<Uint8Array>({
              async start(controller) {
                await both;
                controller.enqueue(new TextEncoder().encode(`event: endpoint\ndata: /messages?sessionId=s${id}\n\n`));
              },
            }),
            { headers: { "content-type": "text/event-stream" } },
          );
        },
      }),
      [Symbol.asyncDispose]() {
        return this.server.stop(true);
      },
    };
    const handle = forwarder(`http://127.0.0.1:${legacy.server.port}/sse`, {
      maxSessions: 1,
      callerOf: (req) => req.headers.get("x-test-caller") ?? undefined,
    });
    const open = async (caller: string) => {
      const res = await handle(
        new Request("http://127.0.0.1:9999/sse", { headers: { "x-test-caller": caller, accept: "text/event-stream" } }),
        detachedContext(),
      );
      expect(res.status).toBe(200);
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      let text = "";
      while (!/sessionId=s\d\n/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
      return { reader, path: (/data: (\S+)\n/.exec(text) as RegExpExecArray)[1] as string };
    };
    const streams = await Promise.all([open("alice"), open("bob")]);
    const post = async (caller: string, path: string) => {
      const res = await handle(
        new Request(`http://127.0.0.1:9999${path}`, {
          method: "POST",
          headers: { "x-test-caller": caller, "content-type": "application/json" },
          body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
        }),
        detachedContext(),
      );
      await res.body?.cancel();
      return res.status;
    };
    try {
      const [alice, bob] = streams;
      expect(await post("alice", alice.path)).toBe(202);
      expect(await post("bob", bob.path)).toBe(202);
      // And each is still the other's to be refused.
      expect(await post("bob", alice.path)).toBe(404);
      expect(await post("alice", bob.path)).toBe(404);
      expect(posted).toHaveLength(2);
    } finally {
      for (const stream of streams) await stream.reader.cancel();
    }
  });

  test("an id that ended is served again only to the caller the upstream opens it for anew, never to its last owner", async () => {
    // An upstream that hands every session the same id (3e0eb88 re-admits an ended id when it does).
    const reached: string[] = [];
    await using constant = {
      server: Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        async fetch(req) {
          const session = req.headers.get("mcp-session-id") ?? "-";
          if (req.method === "DELETE") {
            reached.push(`DELETE ${session}`);
            return new Response(null, { status: 200 });
          }
          const body = (await req.json()) as { id: number; method: string };
          reached.push(`${body.method} ${session}`);
          const headers: Record<string, string> = body.method === "initialize" ? { "mcp-session-id": "constant" } : {};
          return Response.json({ jsonrpc: "2.0", id: body.id, result: {} }, { headers });
        },
      }),
      [Symbol.asyncDispose]() {
        return this.server.stop(true);
      },
    };
    const handle = forwarder(`http://127.0.0.1:${constant.server.port}/mcp`, {
      callerOf: (req) => req.headers.get("x-test-caller") ?? undefined,
    });
    const send = async (caller: string, method: string, session?: string) => {
      const headers = { "x-test-caller": caller, ...(session ? { "mcp-session-id": session } : {}) };
      const res = await handle(
        new Request("http://127.0.0.1:9999/mcp", {
          method: method === "DELETE" ? "DELETE" : "POST",
          headers,
          ...(method === "DELETE" ? {} : { body: JSON.stringify({ jsonrpc: "2.0", id: 1, method }) }),
        }),
        detachedContext(),
      );
      await res.body?.cancel();
      return res.status;
    };
    expect(await send("alice", "initialize")).toBe(200);
    // Opened again for bob while alice holds it: hers still.
    expect(await send("bob", "initialize")).toBe(200);
    expect(await send("bob", "tools/list", "constant")).toBe(404);
    expect(await send("alice", "DELETE", "constant")).toBe(200);
    // Ended: nobody's, whoever presents the id.
    expect(await send("alice", "tools/list", "constant")).toBe(404);
    expect(await send("bob", "tools/list", "constant")).toBe(404);
    // Opened anew by the upstream for bob: his, and alice's old id does not reach it.
    expect(await send("bob", "initialize")).toBe(200);
    expect(await send("bob", "tools/list", "constant")).toBe(200);
    expect(await send("alice", "tools/list", "constant")).toBe(404);
    expect(await send("alice", "DELETE", "constant")).toBe(404);
    expect(reached).toEqual(["initialize -", "initialize -", "DELETE constant", "initialize -", "tools/list constant"]);
  });
});
