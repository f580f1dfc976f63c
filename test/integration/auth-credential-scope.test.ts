/**
 * mcpmgr's credentials for a remote go to its MCP endpoint only (docs/authentication.md,
 * "Where credentials go"): `mcpmgr proxy` and `mcpmgr run URL` in front of a real upstream
 * that records what it received. The endpoint (and the message path a legacy SSE stream from
 * it announced) gets the bearer token and the injected headers; `DELETE /admin/users/1` or
 * any other path is still forwarded, as the client sent it, without them — and the remote's
 * 401 there is the client's answer, not a reason for mcpmgr to authenticate again.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxy, startRun } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

interface Seen {
  method: string;
  path: string;
  authorization: string | null;
  apiKey: string | null;
}

const TOKEN = "mcpmgr-remote-token";
let upstream: ReturnType<typeof Bun.serve>;
let scratch: string;
let tokenFile: string;
const seen: Seen[] = [];

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-credential-scope-"));
  tokenFile = join(scratch, "token");
  await writeFile(tokenFile, `${TOKEN}\n`);
  upstream = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch(req) {
      const url = new URL(req.url);
      seen.push({
        method: req.method,
        path: url.pathname,
        authorization: req.headers.get("authorization"),
        apiKey: req.headers.get("x-api-key"),
      });
      if (url.pathname === "/sse" && req.method === "GET") {
        // Legacy HTTP+SSE: the first event names where to POST messages.
        return new Response(`event: endpoint\ndata: /messages?sessionId=s1\n\n`, {
          headers: { "content-type": "text/event-stream" },
        });
      }
      if (url.pathname === "/moved")
        return new Response(null, { status: 308, headers: { location: "/admin/delete-everything" } });
      if (url.pathname.startsWith("/admin"))
        return new Response("admin needs its own credentials", {
          status: 401,
          headers: { "www-authenticate": 'Bearer realm="admin"' },
        });
      return Response.json({ jsonrpc: "2.0", id: 1, result: {} });
    },
  });
});

afterAll(async () => {
  upstream.stop(true);
  await rm(scratch, { recursive: true, force: true });
});

beforeEach(() => {
  seen.length = 0;
});

const credentialArgs = () => [
  "--remote-auth-bearer-token-file",
  tokenFile,
  "--remote-forward-headers",
  "X-Api-Key=mcpmgr-api-key",
];

const post = (url: string) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });

function at(path: string, method: string): Seen {
  const found = seen.find((s) => s.path === path && s.method === method);
  if (!found) throw new Error(`the upstream saw no ${method} ${path}: ${JSON.stringify(seen)}`);
  return found;
}

describe("mcpmgr proxy", () => {
  test("the MCP endpoint gets the credentials; DELETE /admin/users/1 reaches the remote without them, once", async () => {
    const proxy = await startProxy(`http://127.0.0.1:${upstream.port}/mcp`, credentialArgs());
    try {
      const origin = new URL(proxy.url).origin;
      expect((await post(proxy.url)).status).toBe(200);
      const admin = await fetch(`${origin}/admin/users/1`, { method: "DELETE" });
      // The remote's own answer, untouched: mcpmgr neither retried nor turned it into its own error.
      expect(admin.status).toBe(401);
      expect(await admin.text()).toBe("admin needs its own credentials");
      expect((await fetch(`${origin}/mcp-other`, { method: "GET" })).status).toBe(200);
      expect((await fetch(`${origin}/mcp/`, { method: "POST", body: "{}" })).status).toBe(200);

      expect(at("/mcp", "POST")).toMatchObject({ authorization: `Bearer ${TOKEN}`, apiKey: "mcpmgr-api-key" });
      expect(at("/admin/users/1", "DELETE")).toMatchObject({ authorization: null, apiKey: null });
      expect(seen.filter((s) => s.path === "/admin/users/1")).toHaveLength(1);
      // A path that merely starts like the endpoint is another path.
      expect(at("/mcp-other", "GET")).toMatchObject({ authorization: null, apiKey: null });
      // The endpoint with a trailing slash is the endpoint.
      expect(at("/mcp/", "POST").authorization).toBe(`Bearer ${TOKEN}`);
    } finally {
      await proxy.stop();
    }
  });

  test("legacy SSE: the message path the stream announced gets the credentials, other paths do not", async () => {
    const proxy = await startProxy(`http://127.0.0.1:${upstream.port}/sse`, credentialArgs());
    try {
      const origin = new URL(proxy.url).origin;
      const stream = await fetch(`${origin}/sse`, { headers: { accept: "text/event-stream" } });
      const first = await stream.text();
      // The client sees the endpoint event (pointing at the proxy), byte for byte the same event.
      expect(first).toContain("event: endpoint");
      expect(first).toContain("/messages?sessionId=s1");
      expect((await post(`${origin}/messages?sessionId=s1`)).status).toBe(200);
      expect((await post(`${origin}/elsewhere`)).status).toBe(200);

      expect(at("/sse", "GET").authorization).toBe(`Bearer ${TOKEN}`);
      expect(at("/messages", "POST")).toMatchObject({ authorization: `Bearer ${TOKEN}`, apiKey: "mcpmgr-api-key" });
      expect(at("/elsewhere", "POST")).toMatchObject({ authorization: null, apiKey: null });
    } finally {
      await proxy.stop();
    }
  });

  test("a redirect of the MCP endpoint goes back to the client as it is; mcpmgr does not follow it", async () => {
    const proxy = await startProxy(`http://127.0.0.1:${upstream.port}/moved`, credentialArgs());
    try {
      const answer = await fetch(proxy.url, { method: "POST", body: "{}", redirect: "manual" });
      expect(answer.status).toBe(308);
      expect(answer.headers.get("location")).toBe("/admin/delete-everything");
      expect(seen.map((s) => `${s.method} ${s.path}`)).toEqual(["POST /moved"]);
      expect(at("/moved", "POST").authorization).toBe(`Bearer ${TOKEN}`);
    } finally {
      await proxy.stop();
    }
  });

  test("before any SSE stream announced it, the message path gets nothing", async () => {
    const proxy = await startProxy(`http://127.0.0.1:${upstream.port}/sse`, credentialArgs());
    try {
      expect((await post(`${new URL(proxy.url).origin}/messages?sessionId=s1`)).status).toBe(200);
      expect(at("/messages", "POST")).toMatchObject({ authorization: null, apiKey: null });
    } finally {
      await proxy.stop();
    }
  });
});

test("mcpmgr run URL: the same rule", async () => {
  const home = await mkdtemp(join(scratch, "home-"));
  const run = await startRun([`http://127.0.0.1:${upstream.port}/mcp`, "--name", "scope-demo", ...credentialArgs()], {
    env: { MCPMGR_HOME: home },
  });
  try {
    const url = run.url;
    expect((await post(url)).status).toBe(200);
    expect((await fetch(`${new URL(url).origin}/admin/users/1`, { method: "DELETE" })).status).toBe(401);
    expect(at("/mcp", "POST").authorization).toBe(`Bearer ${TOKEN}`);
    expect(at("/admin/users/1", "DELETE")).toMatchObject({ authorization: null, apiKey: null });
  } finally {
    await run.stop();
  }
});
