/**
 * An upstream that answers with a redirect, through a real `mcpmgr proxy`: a real SDK MCP server
 * (stateless Streamable HTTP) behind a trailing-slash redirect written as its own absolute URL, as
 * Starlette writes them, and a redirect to an "evil" server on another port that records what
 * reaches it. A Location on the upstream's origin becomes the same path on the proxy (the SDK client
 * works through it); any other is refused with 502, so a client that follows redirects is never sent
 * past the proxy with its message (security.md S16).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { until } from "../support/gateway-group.ts";
import { startProxy } from "../support/processes.ts";

setDefaultTimeout(60_000);

let upstream: Server;
let upstreamPort: number;
let evil: ReturnType<typeof Bun.serve>;
const evilHeard: string[] = [];
let proxy: Awaited<ReturnType<typeof startProxy>>;

async function handle(req: IncomingMessage, res: ServerResponse) {
  const path = new URL(req.url ?? "/", "http://upstream").pathname;
  if (path === "/mcp") {
    // Starlette's redirect_slashes: the upstream's own absolute URL, with the slash.
    res.writeHead(307, { location: `http://127.0.0.1:${upstreamPort}/mcp/` }).end();
    return;
  }
  if (path === "/away") {
    res.writeHead(307, { location: `http://127.0.0.1:${evil.port}/steal` }).end();
    return;
  }
  if (path === "/sneaky") {
    res.writeHead(308, { location: `//127.0.0.1:${evil.port}/steal` }).end();
    return;
  }
  // Stateless: a server and a transport per request, as the SDK asks.
  const server = new McpServer({ name: "redirected-upstream", version: "1.0.0" });
  server.registerTool("ping", { description: "answers pong" }, async () => ({
    content: [{ type: "text", text: "pong" }],
  }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on("close", () => void transport.close());
  await server.connect(transport);
  await transport.handleRequest(req, res);
}

beforeAll(async () => {
  evil = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      evilHeard.push(`${req.method} ${new URL(req.url).pathname} ${await req.text()}`);
      return Response.json({ jsonrpc: "2.0", id: 1, result: {} });
    },
  });
  upstream = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  upstreamPort = (upstream.address() as AddressInfo).port;
  proxy = await startProxy(`http://127.0.0.1:${upstreamPort}/mcp`);
});

afterAll(async () => {
  await proxy?.stop();
  upstream?.close();
  evil?.stop(true);
});

const post = (url: string, redirect: "manual" | "follow") =>
  fetch(url, {
    method: "POST",
    redirect,
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });

test("a redirect on the upstream's own origin stays on the proxy: the SDK client follows it through the proxy", async () => {
  const moved = await post(proxy.url, "manual");
  expect(moved.status).toBe(307);
  expect(moved.headers.get("location")).toBe("/mcp/");
  const client = new Client({ name: "redirect-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
  const { content } = (await client.callTool({ name: "ping" })) as { content: { text: string }[] };
  expect(content[0]?.text).toBe("pong");
  await client.close();
});

test("a redirect anywhere else is refused with 502: a client that follows redirects reaches only the proxy", async () => {
  const origin = new URL(proxy.url).origin;
  for (const path of ["/away", "/sneaky"]) {
    const refused = await post(`${origin}${path}`, "follow");
    expect(refused.status).toBe(502);
    const body = (await refused.json()) as { error: { message: string } };
    expect(body.error.message).toContain(`a Location on http://127.0.0.1:${evil.port}`);
  }
  expect(evilHeard).toEqual([]);
  const warning = `redirected a request to a Location on http://127.0.0.1:${evil.port}`;
  expect(await until(() => proxy.output().includes(warning))).toBe(true);
  expect(proxy.output().split(warning).length - 1).toBe(1);
});

test("--trust-proxy-headers: the Location follows a forwarded name it answers to, says Vary, and ignores one no URL can hold (review39)", async () => {
  const trusting = await startProxy(`http://127.0.0.1:${upstreamPort}/mcp`, ["--trust-proxy-headers"]);
  try {
    const moved = (forwardedHost: string) =>
      fetch(trusting.url, {
        method: "POST",
        redirect: "manual",
        headers: {
          "content-type": "application/json",
          "x-forwarded-host": forwardedHost,
          "x-forwarded-proto": "https",
        },
        body: "{}",
      });
    const named = await moved("mcp.localhost:8443");
    expect(named.status).toBe(307);
    expect(named.headers.get("location")).toBe("https://mcp.localhost:8443/mcp/");
    // A cache in front (a 308 or 301 may be kept) must not hand this spelling to another client.
    expect(named.headers.get("vary")).toContain("X-Forwarded-Host");
    for (const unusable of ["localhost:99999", "[::1]:70000"]) {
      const relative = await moved(unusable);
      expect({ unusable, location: relative.headers.get("location") }).toEqual({ unusable, location: "/mcp/" });
    }
  } finally {
    await trusting.stop();
  }
});
