/**
 * More of mcpmgr's OAuth client end to end through `mcpmgr proxy`, against oidc-provider:
 * explicit authorize/token URLs (no discovery), a running proxy renewing its access token
 * (before it expires, and after the remote refuses it) without a browser, and the scopes a
 * login triggered by a remote's 401 asks for (MCP scope selection).
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CALLBACK_PORTS,
  CLIENTS,
  completeLogin,
  JWT_RESOURCE,
  startAuthServer,
  type AuthServer,
} from "../support/auth-server.ts";
import type { RunningFixture } from "../support/conformance.ts";
import {
  confidentialLogin,
  LOCAL_DEV,
  startGate,
  startProtectedRemote,
  until,
  type ProtectedRemote,
} from "../support/protected-remote.ts";
import { CLI_ENTRY, spawnUntil, startProxy, type Running } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const LOGIN_URL = /^(http:\/\/127\.0\.0\.1:\d+\/auth\?\S+)$/m;
let auth: AuthServer;
let fixture: RunningFixture;
let remote: ProtectedRemote["remote"];
let scratch: string;
let secretFile: string;
let setup: ProtectedRemote;

beforeAll(async () => {
  setup = await startProtectedRemote("mcpmgr-oauth-flows-");
  ({ auth, fixture, remote, scratch, secretFile } = setup);
}, 60_000);

afterAll(async () => {
  await setup?.stop();
});

/** `mcpmgr proxy` that logs in (the test plays the user); resolves once it serves. */
async function loggedInProxy(
  args: string[],
  server: AuthServer = auth,
): Promise<Running & { url: string; login: URL }> {
  const home = await mkdtemp(join(scratch, "home-"));
  const running = await spawnUntil(
    [process.execPath, CLI_ENTRY, "proxy", "b", ...args, "--remote-auth-skip-browser"],
    LOGIN_URL,
    { env: { MCPMGR_HOME: home }, timeoutMs: 30_000 },
  );
  const login = running.match[1] as string;
  expect(await completeLogin(login)).toBe(200);
  const url = await until(
    () => /^(http:\/\/127\.0\.0\.1:\d+\/mcp)$/m.exec(running.output())?.[1],
    "the proxy's client URL",
  ).catch(async (err: unknown) => {
    await running.stop();
    throw new Error(`${err instanceof Error ? err.message : String(err)}:\n${running.output()}`);
  });
  expect(server.grants.get("authorization_code") ?? 0).toBeGreaterThan(0);
  return { ...running, url, login: new URL(login) };
}

async function callTool(url: string): Promise<string> {
  const client = new Client({ name: "oauth-flows-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const result = (await client.callTool({ name: "test_simple_text", arguments: {} })) as {
      content: { type: string; text?: string }[];
    };
    return result.content[0]?.text ?? "";
  } finally {
    await client.close();
  }
}

/**
 * Runs `use` with a proxy logged in as the confidential client to the remote behind a gate that
 * `answer`s what it chooses to (see startGate); stops both after.
 */
async function withProxyBehindGate(
  answer: Parameters<typeof startGate>[1],
  use: (proxy: Running & { url: string }) => Promise<void>,
): Promise<void> {
  const gate = startGate(remote.url, answer);
  try {
    const proxy = await loggedInProxy([
      "--target-uri",
      `http://127.0.0.1:${gate.port}/mcp`,
      ...confidentialLogin(setup, CALLBACK_PORTS[2]),
    ]);
    try {
      await use(proxy);
    } finally {
      await proxy.stop();
    }
  } finally {
    await gate.stop(true);
  }
}

/** A remote's 401 refusing the access token it was sent. */
const tokenRefused = (description: string) =>
  new Response(null, {
    status: 401,
    headers: { "www-authenticate": `Bearer error="invalid_token", error_description="${description}"` },
  });

const logins = (output: string) => output.split("\n").filter((line) => LOGIN_URL.test(line)).length;

test("explicit --remote-auth-authorize-url and --remote-auth-token-url (no issuer, no discovery): logs in and calls a tool", async () => {
  const proxy = await loggedInProxy([
    "--target-uri",
    remote.url,
    "--remote-auth",
    "--remote-auth-authorize-url",
    `${auth.issuer}/auth`,
    "--remote-auth-token-url",
    `${auth.issuer}/token`,
    "--remote-auth-client-id",
    CLIENTS.mcpmgr.client_id,
    "--remote-auth-client-secret-file",
    secretFile,
    // Not OIDC, so no default scopes: oidc-provider refuses a grant of nothing.
    "--remote-auth-resource",
    JWT_RESOURCE,
    "--remote-auth-scopes",
    "mcp:read",
    "--remote-auth-callback-port",
    String(CALLBACK_PORTS[0]),
  ]);
  try {
    expect(proxy.login.origin + proxy.login.pathname).toBe(`${auth.issuer}/auth`);
    expect(proxy.login.searchParams.get("scope")).toBe("mcp:read");
    expect(proxy.login.searchParams.get("code_challenge_method")).toBe("S256");
    expect(await callTool(proxy.url)).not.toBe("");
  } finally {
    await proxy.stop();
  }
}, 90_000);

test("a running proxy refreshes its access token before it expires, without a browser, and keeps serving", async () => {
  const shortLived = await startAuthServer({ accessTokenTtl: 4 });
  const protectedRemote = await startProxy(fixture.url, [
    "--oidc-issuer",
    shortLived.issuer,
    "--oidc-audience",
    JWT_RESOURCE,
    ...LOCAL_DEV,
  ]);
  try {
    const proxy = await loggedInProxy(
      [
        "--target-uri",
        protectedRemote.url,
        "--remote-auth",
        "--remote-auth-issuer",
        shortLived.issuer,
        "--remote-auth-client-id",
        CLIENTS.mcpmgrPublic.client_id,
        "--remote-auth-resource",
        JWT_RESOURCE,
        "--remote-auth-callback-port",
        String(CALLBACK_PORTS[1]),
      ],
      shortLived,
    );
    try {
      expect(await callTool(proxy.url)).not.toBe("");
      const before = shortLived.grants.get("refresh_token") ?? 0;
      // Past half of the 4 s lifetime: the next request renews first.
      await Bun.sleep(2_500);
      expect(await callTool(proxy.url)).not.toBe("");
      expect(shortLived.grants.get("refresh_token") ?? 0).toBeGreaterThan(before);
      // And again after the first token's expiry.
      await Bun.sleep(2_500);
      expect(await callTool(proxy.url)).not.toBe("");
      expect(logins(proxy.output())).toBe(1);
    } finally {
      await proxy.stop();
    }
  } finally {
    await protectedRemote.stop();
    await shortLived.stop();
  }
}, 90_000);

test("a running proxy whose token the remote refuses (401) refreshes it and retries, without a browser", async () => {
  // Between mcpmgr and the remote: forwards everything, but refuses one request when told to.
  let refuseNext = false;
  const refused: string[] = [];
  const refuseOne = (req: Request) => {
    if (!refuseNext) return undefined;
    refuseNext = false;
    refused.push(req.headers.get("authorization") ?? "");
    return tokenRefused("revoked");
  };
  await withProxyBehindGate(refuseOne, async (proxy) => {
    expect(await callTool(proxy.url)).not.toBe("");
    const before = auth.grants.get("refresh_token") ?? 0;
    refuseNext = true;
    expect(await callTool(proxy.url)).not.toBe("");
    expect(refused).toHaveLength(1);
    expect(auth.grants.get("refresh_token") ?? 0).toBe(before + 1);
    // Logged on stderr, a pipe of its own: it may be read after the answer.
    await until(() => (proxy.output().includes("refused the access token; renewing it") ? true : undefined), "the log");
    expect(logins(proxy.output())).toBe(1);
  });
}, 90_000);

test("a remote that refuses every token costs one refresh per 30 s, not one or two per request", async () => {
  let refuseAll = false;
  let refusals = 0;
  const refuseEvery = () => {
    if (!refuseAll) return undefined;
    refusals++;
    return tokenRefused("wrong audience");
  };
  await withProxyBehindGate(refuseEvery, async (proxy) => {
    expect(await callTool(proxy.url)).not.toBe("");
    const before = auth.grants.get("refresh_token") ?? 0;
    refuseAll = true;
    for (let i = 0; i < 5; i++) {
      const answer = await fetch(proxy.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "ping" }),
      });
      expect(answer.status).toBe(502);
      await answer.body?.cancel();
    }
    expect(refusals).toBeGreaterThanOrEqual(5);
    expect(auth.grants.get("refresh_token") ?? 0).toBe(before + 1);
    await until(() => (proxy.output().includes("not renewing it again for 30 s") ? true : undefined), "the log");
    expect(logins(proxy.output())).toBe(1);
  });
}, 90_000);

describe("scopes asked for when a remote's 401 starts the login", () => {
  let challengeScope: string | undefined;
  let remoteServer: ReturnType<typeof Bun.serve>;
  beforeAll(() => {
    remoteServer = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(req) {
        const origin = new URL(req.url).origin;
        if (new URL(req.url).pathname.startsWith("/.well-known/oauth-protected-resource")) {
          return Response.json({
            resource: `${origin}/mcp`,
            authorization_servers: [auth.issuer],
            scopes_supported: ["openid", "mcp:write"],
          });
        }
        const scope = challengeScope === undefined ? "" : `, scope="${challengeScope}"`;
        return new Response(null, {
          status: 401,
          headers: {
            "www-authenticate": `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"${scope}`,
          },
        });
      },
    });
  });
  afterAll(() => remoteServer.stop(true));

  async function requestedScope(extra: string[]): Promise<string | null> {
    const home = await mkdtemp(join(scratch, "home-scope-"));
    const args = [
      "--target-uri",
      `http://127.0.0.1:${remoteServer.port}/mcp`,
      "--remote-auth-client-id",
      CLIENTS.mcpmgr.client_id,
      "--remote-auth-client-secret-file",
      secretFile,
      "--remote-auth-callback-port",
      String(CALLBACK_PORTS[0]),
      "--remote-auth-skip-browser",
      ...extra,
    ];
    const running = await spawnUntil([process.execPath, CLI_ENTRY, "proxy", "b", ...args], LOGIN_URL, {
      env: { MCPMGR_HOME: home },
      timeoutMs: 30_000,
    });
    await running.stop();
    return new URL(running.match[1] as string).searchParams.get("scope");
  }

  // oidc-provider lists offline_access: a chosen set gains it (MCP 2026-07-28, refresh tokens).
  test("the challenge's scope first (even though the authorization server is OIDC)", async () => {
    challengeScope = "mcp:read";
    expect(await requestedScope([])).toBe("mcp:read offline_access");
  }, 60_000);

  test("then the metadata's scopes_supported", async () => {
    challengeScope = undefined;
    expect(await requestedScope([])).toBe("openid mcp:write offline_access");
  }, 60_000);

  test("--remote-auth-scopes wins over both", async () => {
    challengeScope = "mcp:read";
    expect(await requestedScope(["--remote-auth-scopes", "openid,email"])).toBe("openid email");
  }, 60_000);
});
