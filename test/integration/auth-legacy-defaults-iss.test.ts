/**
 * RFC 9207 for an authorization server known only from the MCP 2025-03-26 defaults: a remote that
 * publishes no metadata at all (no RFC 9728 document, no RFC 8414 or OIDC discovery) has its
 * authorization server at its own origin (/authorize, /token, /register), and that origin is the
 * issuer an `iss` in the authorization response must name. A real `mcpmgr proxy` logs in to a
 * real server on loopback that plays such a remote; the test plays the browser.
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { until } from "../support/protected-remote.ts";
import { CLI_ENTRY, spawnUntil, type Running } from "../support/processes.ts";

setDefaultTimeout(60_000);

const LOGIN_URL = /^(http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+)$/m;
const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A 2025-03-26 remote without metadata, its own authorization server: registers any client,
 * authorizes at once (redirecting with `iss` = what `issuerOf(origin)` says), redeems codes, and
 * answers the MCP endpoint 401 until it gets the token. Records which of its paths were asked.
 */
function legacyRemote(issuerOf: (origin: string) => string) {
  const asked: string[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      asked.push(url.pathname);
      if (url.pathname === "/register" && req.method === "POST") {
        const body = (await req.json()) as Record<string, unknown>;
        return Response.json(
          { ...body, client_id: "legacy-client", token_endpoint_auth_method: "none" },
          { status: 201 },
        );
      }
      if (url.pathname === "/authorize") {
        const back = new URL(url.searchParams.get("redirect_uri") ?? "");
        back.searchParams.set("code", "the-code");
        back.searchParams.set("state", url.searchParams.get("state") ?? "");
        back.searchParams.set("iss", issuerOf(url.origin));
        return Response.redirect(back.href, 302);
      }
      if (url.pathname === "/token" && req.method === "POST")
        return Response.json({ access_token: "legacy-token", token_type: "Bearer", expires_in: 3600 });
      if (url.pathname === "/mcp") {
        if (req.headers.get("authorization") !== "Bearer legacy-token")
          return new Response(null, { status: 401, headers: { "www-authenticate": "Bearer" } });
        return Response.json({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "not a real MCP server" } });
      }
      return new Response("not found", { status: 404 });
    },
  });
  cleanups.push(() => server.stop(true));
  return { server, asked, url: `http://127.0.0.1:${server.port}/mcp` };
}

async function loggingIn(target: string): Promise<Running & { login: string }> {
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-legacy-iss-"));
  cleanups.push(() => rm(home, { recursive: true, force: true }));
  const running = await spawnUntil(
    [
      process.execPath,
      CLI_ENTRY,
      "proxy",
      "legacy",
      "--target-uri",
      target,
      "--remote-auth",
      "--remote-auth-skip-browser",
    ],
    LOGIN_URL,
    { env: { MCPMGR_HOME: home }, timeoutMs: 30_000 },
  );
  cleanups.push(() => running.stop());
  return { ...running, login: running.match[1] as string };
}

/** The browser: the authorization URL, then the redirect to mcpmgr's callback. */
async function playBrowser(login: string): Promise<void> {
  const answer = await fetch(login, { redirect: "manual" });
  const callback = answer.headers.get("location");
  expect(callback).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
  await (await fetch(callback as string)).body?.cancel();
}

test("an iss naming another server is refused: the code is never redeemed", async () => {
  const remote = legacyRemote(() => "https://evil.example");
  const proxy = await loggingIn(remote.url);
  await playBrowser(proxy.login);
  await until(
    () => (proxy.output().includes('names issuer "https://evil.example"') ? true : undefined),
    "the refusal",
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}\n${proxy.output()}`);
  });
  expect(proxy.output()).toContain(`not http://127.0.0.1:${remote.server.port}`);
  expect(remote.asked).not.toContain("/token");
});

test("an iss naming the remote's origin (with or without its slash) is accepted", async () => {
  for (const slash of ["", "/"]) {
    const remote = legacyRemote((origin) => `${origin}${slash}`);
    const proxy = await loggingIn(remote.url);
    await playBrowser(proxy.login);
    await until(() => (remote.asked.includes("/token") ? true : undefined), "the code redeemed");
    expect(proxy.output()).not.toContain("names issuer");
  }
});
