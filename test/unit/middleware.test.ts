/** Built-in protections, driven as handlers with `new Request` (ARCHITECTURE.md §3.1). */
import { describe, expect, test } from "bun:test";
import { bodyLimit } from "../../src/middleware/body-limit.ts";
import { healthEndpoint } from "../../src/middleware/health.ts";
import { originGuard } from "../../src/middleware/origin-guard.ts";
import { compose, detachedContext, type Handler } from "../../src/proxy/handler.ts";

const reached: Handler = async (req) => new Response(`reached:${req.body ? (await req.arrayBuffer()).byteLength : 0}`);
const ctx = detachedContext();

describe("origin guard on a loopback listener (DNS-rebinding protection)", () => {
  const handle = compose(reached, originGuard({ listenHost: "127.0.0.1", trustProxyHeaders: false }));
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
  const handle = compose(reached, originGuard({ listenHost: "0.0.0.0", trustProxyHeaders: true }));
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
