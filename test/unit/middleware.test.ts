/** Built-in protections, driven as handlers with `new Request` (ARCHITECTURE.md §3.1). */
import { describe, expect, test } from "bun:test";
import { bodyLimit } from "../../src/middleware/body-limit.ts";
import { healthEndpoint } from "../../src/middleware/health.ts";
import { withBuiltinProtections } from "../../src/middleware/builtin-chain.ts";
import { originGuard } from "../../src/middleware/origin-guard.ts";
import { serve } from "../../src/proxy/serve.ts";
import { compose, detachedContext, type Handler } from "../../src/proxy/handler.ts";

const reached: Handler = async (req) => new Response(`reached:${req.body ? (await req.arrayBuffer()).byteLength : 0}`);
const ctx = detachedContext();

describe("origin guard on a loopback listener (DNS-rebinding protection)", () => {
  const handle = compose(reached, originGuard({ listenHost: "127.0.0.1", trustProxyHeaders: false, allowedHosts: [] }));
  const call = (headers: Record<string, string>) =>
    handle(new Request("http://127.0.0.1:8080/mcp", { method: "POST", headers, body: "{}" }), ctx);

  test("requests without Origin (non-browser clients) pass", async () => {
    expect((await call({ host: "127.0.0.1:8080" })).status).toBe(200);
    expect((await call({ host: "localhost:8080" })).status).toBe(200);
    expect((await call({ host: "[::1]:8080" })).status).toBe(200);
  });

  test("loopback origins pass", async () => {
    expect((await call({ host: "localhost:8080", origin: "http://localhost:6274" })).status).toBe(200);
    expect((await call({ host: "127.0.0.1:8080", origin: "http://127.0.0.1:3000" })).status).toBe(200);
  });

  test("a foreign Origin gets 403 with a JSON-RPC error", async () => {
    const res = await call({ host: "127.0.0.1:8080", origin: "https://evil.example" });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32000);
    expect((await call({ host: "127.0.0.1:8080", origin: "null" })).status).toBe(403);
  });

  test("a rebound Host name gets 403", async () => {
    expect((await call({ host: "evil.example:8080" })).status).toBe(403);
    expect((await call({ host: "127.0.0.1.evil.example" })).status).toBe(403);
  });
});

describe("origin guard on a public listener", () => {
  const handle = compose(
    reached,
    originGuard({
      listenHost: "0.0.0.0",
      trustProxyHeaders: true,
      allowedHosts: ["mcp.internal", "mcp.example.com"],
      machineNames: [],
    }),
  );
  const call = (headers: Record<string, string>) =>
    handle(new Request("http://mcp.internal:8080/mcp", { headers }), ctx);

  test("same-origin, trusted forwarded host and no-Origin requests pass; others get 403", async () => {
    expect((await call({ host: "mcp.internal:8080" })).status).toBe(200);
    expect((await call({ host: "mcp.internal:8080", origin: "http://mcp.internal:8080" })).status).toBe(200);
    expect(
      (await call({ host: "10.0.0.5:8080", origin: "https://mcp.example.com", "x-forwarded-host": "mcp.example.com" }))
        .status,
    ).toBe(200);
    expect((await call({ host: "mcp.internal:8080", origin: "https://evil.example" })).status).toBe(403);
  });

  // Review 7 (R7-M2): a page whose DNS name was rebound to this machine sends its own name as Host and Origin.
  test("a rebound name is refused, with or without its Origin, naming the host and the option", async () => {
    const rebound: Record<string, string>[] = [
      { host: "rebind.attacker.example:8080" },
      { host: "rebind.attacker.example:8080", origin: "http://rebind.attacker.example:8080" },
    ];
    for (const headers of rebound) {
      const res = await call(headers);
      expect(res.status).toBe(403);
      const body = (await res.json()) as { jsonrpc: string; error: { code: number; message: string } };
      expect(body.jsonrpc).toBe("2.0");
      expect(body.error.code).toBe(-32000);
      expect(body.error.message).toContain('"rebind.attacker.example"');
      expect(body.error.message).toContain("--allowed-hosts");
      expect(body.error.message).not.toContain("\n");
    }
  });

  test("a trusted X-Forwarded-Host must be allowed for its Origin to pass (a reverse proxy forwarding any name)", async () => {
    const rebound = { origin: "http://rebind.attacker.example", "x-forwarded-host": "rebind.attacker.example" };
    expect((await call({ host: "10.0.0.5:8080", ...rebound })).status).toBe(403);
  });
});

describe("origin guard on a loopback listener with --allowed-hosts (a reverse proxy on this machine)", () => {
  const handle = compose(
    reached,
    originGuard({ listenHost: "127.0.0.1", trustProxyHeaders: true, allowedHosts: [".example.com"] }),
  );
  const call = (headers: Record<string, string>) => handle(new Request("http://127.0.0.1:8080/mcp", { headers }), ctx);

  test("an allowed name is served, as Host or as the trusted forwarded host its Origin names", async () => {
    expect((await call({ host: "mcp.example.com" })).status).toBe(200);
    expect((await call({ host: "mcp.example.com", origin: "https://mcp.example.com" })).status).toBe(200);
    const forwarded = { origin: "https://mcp.example.com", "x-forwarded-host": "mcp.example.com" };
    expect((await call({ host: "127.0.0.1:8080", ...forwarded })).status).toBe(200);
  });

  test("IP addresses and other names stay refused on loopback", async () => {
    expect((await call({ host: "192.0.2.7:8080" })).status).toBe(403);
    expect((await call({ host: "evil.example" })).status).toBe(403);
    const rebound = { origin: "http://evil.example", "x-forwarded-host": "evil.example" };
    expect((await call({ host: "127.0.0.1:8080", ...rebound })).status).toBe(403);
    expect((await call({ host: "mcp.example.com", origin: "https://evil.example" })).status).toBe(403);
  });
});

describe("the request's Host, on the wire", () => {
  /** Sends raw bytes to a real listener with the built-in protections; the status line and body come back. */
  async function rawRequest(port: number, text: string): Promise<{ status: number; body: string }> {
    const received: string[] = [];
    await new Promise<void>((resolve) => {
      void Bun.connect({
        hostname: "127.0.0.1",
        port,
        socket: {
          open: (socket) => void socket.write(text),
          data: (_socket, chunk) => void received.push(chunk.toString()),
          close: () => resolve(),
          error: () => resolve(),
        },
      });
    });
    const answer = received.join("");
    return { status: Number(answer.split(" ")[1]), body: answer.slice(answer.indexOf("\r\n\r\n") + 4) };
  }

  test("no Host (HTTP/1.0) or two Host headers: 400 before anything else runs", async () => {
    const upstream: string[] = [];
    const server = serve({
      host: "127.0.0.1",
      port: 0,
      handler: withBuiltinProtections(
        (req) => {
          upstream.push(req.url);
          return new Response("reached");
        },
        // A public listener, where the Host check does not already refuse unknown names.
        { serverName: "t", listenHost: "0.0.0.0", trustProxyHeaders: false, allowedHosts: ["mcp.internal"] },
      ),
    });
    try {
      const missing = await rawRequest(server.port, "GET /mcp HTTP/1.0\r\n\r\n");
      expect(missing.status).toBe(400);
      expect(JSON.parse(missing.body).error.message).toContain("Host");
      const twice = await rawRequest(
        server.port,
        "POST /mcp HTTP/1.1\r\nHost: mcp.internal\r\nHost: evil.example\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
      );
      expect(twice.status).toBe(400);
      expect(upstream).toEqual([]);
      const fine = await rawRequest(
        server.port,
        "GET /mcp HTTP/1.1\r\nHost: mcp.internal\r\nConnection: close\r\n\r\n",
      );
      expect(fine.status).toBe(200);
      expect(upstream).toEqual(["http://mcp.internal/mcp"]);
    } finally {
      await server.shutdown(100);
    }
  });

  test("a Host the name check accepts but no URL can hold (a bad port, a %, more after an IPv6 literal): 400", async () => {
    // Bun makes such a Host the request's URL anyway; behind the OIDC check, reading it made a 500
    // "internal proxy error" and an error line in the log for each request, without a token.
    const reached: string[] = [];
    const server = serve({
      host: "127.0.0.1",
      port: 0,
      handler: withBuiltinProtections(
        (req) => {
          reached.push(new URL(req.url).origin);
          return new Response("reached");
        },
        { serverName: "t", listenHost: "127.0.0.1", trustProxyHeaders: false, allowedHosts: [] },
      ),
    });
    try {
      for (const host of ["localhost:abc", "localhost:99999", "evil.example%23.localhost", "[::1]x.localhost"]) {
        const refused = await rawRequest(
          server.port,
          `GET /mcp HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
        );
        expect(refused.status).toBe(400);
        expect(JSON.parse(refused.body).error.message).toContain("not a valid host name and port");
      }
      expect(reached).toEqual([]);
      const fine = await rawRequest(
        server.port,
        "GET /mcp HTTP/1.1\r\nHost: localhost:8080\r\nConnection: close\r\n\r\n",
      );
      expect(fine.status).toBe(200);
      expect(reached).toEqual(["http://localhost:8080"]);
    } finally {
      await server.shutdown(100);
    }
  });
});

describe("body limit", () => {
  const handle = compose(reached, bodyLimit(1024));

  test("a declared Content-Length over the limit gets 413 before the upstream is touched", async () => {
    let touched = false;
    const guarded = compose(async () => {
      touched = true;
      return new Response("x");
    }, bodyLimit(1024));
    const res = await guarded(
      new Request("http://127.0.0.1/mcp", {
        method: "POST",
        body: "x".repeat(2048),
        headers: { "content-length": "2048" },
      }),
      ctx,
    );
    expect(res.status).toBe(413);
    expect(touched).toBe(false);
  });

  test("a body with a declared length under the limit passes without being turned into a stream", async () => {
    // Reading `req.body` makes a stream of the body: the forwarder then could not read a small body whole.
    let streamed = false;
    const request = new Request("http://127.0.0.1/mcp", {
      method: "POST",
      body: "{}",
      headers: { "content-length": "2" },
    });
    const probe = new Proxy(request, {
      get(target, name) {
        if (name === "body") streamed = true;
        const value = Reflect.get(target, name, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    let text = "";
    const guarded = compose(async (req) => {
      text = await req.text();
      return new Response("x");
    }, bodyLimit(1024));
    const res = await guarded(probe, ctx);
    expect(res.status).toBe(200);
    expect(text).toBe("{}");
    expect(streamed).toBe(false);
  });

  test("a chunked body that grows past the limit gets 413", async () => {
    const chunks = [new Uint8Array(700), new Uint8Array(700)];
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    });
    const res = await handle(
      new Request("http://127.0.0.1/mcp", { method: "POST", body, duplex: "half" } as RequestInit),
      ctx,
    );
    expect(res.status).toBe(413);
  });

  test("bodies within the limit pass whole", async () => {
    const res = await handle(new Request("http://127.0.0.1/mcp", { method: "POST", body: "y".repeat(1000) }), ctx);
    expect(await res.text()).toBe("reached:1000");
  });
});

describe("health", () => {
  const handle = compose(
    async () => new Response("upstream", { status: 502 }),
    healthEndpoint(() => ({ server: "demo" })),
  );

  test("GET /health answers without the upstream", async () => {
    const res = await handle(new Request("http://127.0.0.1/health"), ctx);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok", server: "demo" });
  });

  test("other paths, and /healthz, go to the upstream", async () => {
    expect((await handle(new Request("http://127.0.0.1/healthz"), ctx)).status).toBe(502);
    expect((await handle(new Request("http://127.0.0.1/mcp/health"), ctx)).status).toBe(502);
    expect((await handle(new Request("http://127.0.0.1/health", { method: "POST", body: "{}" }), ctx)).status).toBe(
      502,
    );
  });
});

describe("health behind the Host/Origin guard (every endpoint's built-in protections)", () => {
  const handle = withBuiltinProtections(async () => new Response("upstream", { status: 502 }), {
    serverName: "secret-project",
    listenHost: "127.0.0.1",
    trustProxyHeaders: false,
    allowedHosts: [],
  });
  const health = (headers: Record<string, string>) =>
    handle(new Request("http://127.0.0.1:8080/health", { headers }), ctx);

  test("a local check gets the answer", async () => {
    const res = await health({ host: "127.0.0.1:8080" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok", server: "secret-project" });
  });

  test("a page on another site learns nothing through a rebound name or its own Origin", async () => {
    const foreign: Record<string, string>[] = [
      { host: "attacker.example:8080" },
      { host: "127.0.0.1:8080", origin: "https://evil.example" },
    ];
    for (const headers of foreign) {
      const res = await health(headers);
      expect(res.status).toBe(403);
      expect(await res.text()).not.toContain("secret-project");
    }
  });
  test("bound beyond loopback, a rebound name learns nothing either; an address gets the answer", async () => {
    const beyond = withBuiltinProtections(async () => new Response("upstream", { status: 502 }), {
      serverName: "secret-project",
      listenHost: "0.0.0.0",
      trustProxyHeaders: false,
      allowedHosts: [],
    });
    const get = (host: string) => beyond(new Request(`http://${host}/health`, { headers: { host } }), ctx);
    const refused = await get("rebind.attacker.example:8080");
    expect(refused.status).toBe(403);
    expect(await refused.text()).not.toContain("secret-project");
    expect((await get("192.0.2.7:8080")).status).toBe(200);
  });
});
