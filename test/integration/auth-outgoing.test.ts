/**
 * mcpmgr authenticating to a remote MCP server, against a real authorization server
 * (oidc-provider): static bearer tokens and injected headers; the authorization-code flow
 * with PKCE end to end (login and consent played over HTTP with a cookie jar from the URL
 * mcpmgr prints); tokens kept across restarts and refreshed without a browser; dynamic
 * registration; auto-detection from the remote's 401; token exchange; two logins at once.
 * The "remote" is `mcpmgr proxy --oidc-*` in front of the conformance fixture.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, writeFile } from "node:fs/promises";
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
  startProtectedRemote,
  until,
  type ProtectedRemote,
} from "../support/protected-remote.ts";
import {
  CLI_ENTRY,
  freePort,
  REPO_ROOT,
  spawnCollect,
  spawnUntil,
  startProxy,
  type Running,
} from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let auth: AuthServer;
let fixture: RunningFixture;
let remote: ProtectedRemote["remote"];
let scratch: string;
let secretFile: string;
let setup: ProtectedRemote;

beforeAll(async () => {
  setup = await startProtectedRemote("mcpmgr-oauth-");
  ({ auth, fixture, remote, scratch, secretFile } = setup);
}, 60_000);

afterAll(async () => {
  await setup?.stop();
});

const loginUrl = (output: string) => /^(http:\/\/127\.0\.0\.1:\d+\/auth\?\S+)$/m.exec(output)?.[1];
const clientUrl = (output: string) => /^(http:\/\/127\.0\.0\.1:\d+\/mcp)$/m.exec(output)?.[1];

/** `mcpmgr proxy` with outgoing auth: logs in (by playing the user) if it asks, then returns its client URL. */
async function startAuthenticatedProxy(
  args: string[],
  options: { home: string; expectLogin: boolean; target?: string; env?: Record<string, string> },
): Promise<Running & { url: string; login?: string }> {
  const running = await spawnUntil(
    [process.execPath, CLI_ENTRY, "proxy", "b", "--target-uri", options.target ?? remote.url, ...args],
    /(^http:\/\/127\.0\.0\.1:\d+\/auth\?\S+$)|(^http:\/\/127\.0\.0\.1:\d+\/mcp$)/m,
    {
      env: { MCPMGR_HOME: options.home, ...options.env },
      timeoutMs: 30_000,
    },
  );
  const login = loginUrl(running.output());
  expect(login !== undefined).toBe(options.expectLogin);
  if (login) expect(await completeLogin(login)).toBe(200);
  const url = await until(() => clientUrl(running.output()), "the proxy's client URL");
  return { ...running, url, ...(login ? { login } : {}) };
}

/**
 * `mcpmgr proxy` in front of `target` with `args` (never opening a browser), run to its end; its
 * exit code and stderr. Not spawnSync: the authorization server runs in this test process and
 * must keep answering.
 */
async function proxyUntilExit(target: string, args: string[], home: string): Promise<{ code: number; stderr: string }> {
  const argv = ["proxy", "b", "--target-uri", target, "--remote-auth-skip-browser", ...args];
  const proc = Bun.spawn([process.execPath, CLI_ENTRY, ...argv], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  return { code, stderr };
}

/** `mcpmgr ARGS` in `home`, run to its end (not spawnSync: the authorization server runs in this process). */
async function mcpmgr(home: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return spawnCollect([process.execPath, CLI_ENTRY, ...args], { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home });
}

/** `secret list`'s lines in `home`, each an oauth- name with its description (never a value). */
async function describedSecrets(home: string): Promise<string[]> {
  const listed = await mcpmgr(home, ["secret", "list"]);
  expect(listed.code).toBe(0);
  return listed.stdout.trim().split("\n").filter(Boolean);
}

async function listTools(url: string): Promise<string[]> {
  const client = new Client({ name: "oauth-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    return (await client.listTools()).tools.map((t) => t.name);
  } finally {
    await client.close();
  }
}

describe("static credentials", () => {
  let upstream: ReturnType<typeof Bun.serve>;
  const seen: Headers[] = [];
  beforeAll(() => {
    upstream = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) => (seen.push(req.headers), Response.json({ jsonrpc: "2.0", id: 1, result: {} })),
    });
  });
  afterAll(() => upstream.stop(true));

  test("a bearer token file and injected headers (literal and from the secrets manager) reach the remote; the client's token does not", async () => {
    const tokenFile = join(scratch, "bearer");
    await writeFile(tokenFile, "mcpmgr-static-token\n");
    const proxy = await startProxy(
      `http://127.0.0.1:${upstream.port}/mcp`,
      [
        "--remote-auth-bearer-token-file",
        tokenFile,
        "--remote-forward-headers",
        "X-Api-Version=2",
        "--remote-forward-headers-secret",
        "X-Api-Key=api-key",
      ],
      {
        env: { MCPMGR_SECRETS_PROVIDER: "environment", MCPMGR_SECRET_API_KEY: "from-the-secrets-manager" },
      },
    );
    try {
      seen.length = 0;
      const response = await fetch(proxy.url, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer the-clients-own-token" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
      });
      expect(response.status).toBe(200);
      expect(seen[0]?.get("authorization")).toBe("Bearer mcpmgr-static-token");
      expect(seen[0]?.get("x-api-version")).toBe("2");
      expect(seen[0]?.get("x-api-key")).toBe("from-the-secrets-manager");
      expect(proxy.output()).not.toContain("from-the-secrets-manager");
    } finally {
      await proxy.stop();
    }
  });

  test("hop-by-hop and forwarding headers cannot be injected; Authorization conflicts with a token", () => {
    for (const [args, text] of [
      [["--remote-forward-headers", "Host=evil"], "cannot be injected"],
      [["--remote-forward-headers", "X-Forwarded-For=1.2.3.4"], "cannot be injected"],
      [["--remote-forward-headers", "Connection=close"], "cannot be injected"],
      [["--remote-auth-bearer-token", "t", "--remote-forward-headers", "Authorization=Bearer x"], "conflicts"],
    ] as const) {
      const result = Bun.spawnSync(
        [process.execPath, CLI_ENTRY, "proxy", "p", "--target-uri", `http://127.0.0.1:${upstream.port}/mcp`, ...args],
        { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1" } },
      );
      expect(result.exitCode).toBe(2);
      expect(result.stderr.toString()).toContain(text);
    }
  });
});

describe("the authorization-code flow with PKCE", () => {
  let home: string;
  beforeAll(async () => {
    home = await mkdtemp(join(scratch, "home-"));
  });

  test("logs in from the printed URL, then proxies with the token; the remote refuses the proxy without it", async () => {
    const refused = await fetch(remote.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(refused.status).toBe(401);
    const args = [...confidentialLogin(setup, CALLBACK_PORTS[0]), "--remote-auth-skip-browser"];
    const proxy = await startAuthenticatedProxy(args, { home, expectLogin: true });
    try {
      const login = new URL(proxy.login as string);
      expect(login.searchParams.get("code_challenge_method")).toBe("S256");
      expect(login.searchParams.get("code_challenge")?.length).toBeGreaterThan(40);
      expect(login.searchParams.get("state")?.length).toBeGreaterThan(20);
      expect(login.searchParams.get("resource")).toBe(JWT_RESOURCE);
      // The OIDC defaults, and offline_access since the server lists it (a refresh token is wanted).
      expect(login.searchParams.get("scope")).toBe("openid profile email offline_access");
      expect(await listTools(proxy.url)).toContain("test_simple_text");
    } finally {
      await proxy.stop();
    }
    // A restart finds the tokens in the secrets store: no login.
    const again = await startAuthenticatedProxy(args, { home, expectLogin: false });
    try {
      expect(await listTools(again.url)).toContain("test_simple_text");
    } finally {
      await again.stop();
    }
  }, 120_000);

  test("an expired access token is refreshed at start-up without a browser", async () => {
    const shortLived = await startAuthServer({ accessTokenTtl: 2 });
    const home2 = await mkdtemp(join(scratch, "home-refresh-"));
    const protectedRemote = await startProxy(fixture.url, [
      "--oidc-issuer",
      shortLived.issuer,
      "--oidc-audience",
      JWT_RESOURCE,
      ...LOCAL_DEV,
    ]);
    try {
      const args = [
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
        "--remote-auth-skip-browser",
      ];
      const first = await spawnUntil(
        [process.execPath, CLI_ENTRY, "proxy", "b", ...args],
        /^(http:\/\/127\.0\.0\.1:\d+\/auth\?\S+)$/m,
        { env: { MCPMGR_HOME: home2 }, timeoutMs: 30_000 },
      );
      expect(await completeLogin(first.match[1] as string)).toBe(200);
      await until(() => clientUrl(first.output()), "the first proxy's URL");
      await first.stop();
      await Bun.sleep(2_500);
      const before = shortLived.grants.get("refresh_token") ?? 0;
      const second = await spawnUntil(
        [process.execPath, CLI_ENTRY, "proxy", "b", ...args],
        /^(http:\/\/127\.0\.0\.1:\d+\/mcp)$/m,
        { env: { MCPMGR_HOME: home2 }, timeoutMs: 30_000 },
      );
      try {
        expect(loginUrl(second.output())).toBeUndefined();
        expect(shortLived.grants.get("refresh_token") ?? 0).toBeGreaterThan(before);
        expect(await listTools(second.match[1] as string)).toContain("test_simple_text");
      } finally {
        await second.stop();
      }
    } finally {
      await protectedRemote.stop();
      await shortLived.stop();
    }
  }, 120_000);

  test("a revoked grant leads to a new login, saying why", async () => {
    const shortLived = await startAuthServer({ accessTokenTtl: 2 });
    const home6 = await mkdtemp(join(scratch, "home-revoked-"));
    const protectedRemote = await startProxy(fixture.url, [
      "--oidc-issuer",
      shortLived.issuer,
      "--oidc-audience",
      JWT_RESOURCE,
      ...LOCAL_DEV,
    ]);
    try {
      const args = [
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
        String(CALLBACK_PORTS[2]),
        "--remote-auth-skip-browser",
      ];
      const first = await spawnUntil(
        [process.execPath, CLI_ENTRY, "proxy", "b", ...args],
        /^(http:\/\/127\.0\.0\.1:\d+\/auth\?\S+)$/m,
        { env: { MCPMGR_HOME: home6 }, timeoutMs: 30_000 },
      );
      expect(await completeLogin(first.match[1] as string)).toBe(200);
      await until(() => clientUrl(first.output()), "the first proxy's URL");
      await first.stop();
      // Revoke the stored refresh token at the authorization server, as an admin would.
      const { createSecretManager } = await import("../../src/secrets/manager.ts");
      const { resolvePaths } = await import("../../src/state/paths.ts");
      const secrets = createSecretManager({
        dir: resolvePaths({ ...process.env, MCPMGR_HOME: home6 }).dataDir,
        env: process.env,
      });
      const names = (await secrets.provider.list()).filter((n) => n.startsWith("oauth-"));
      expect(names.length).toBe(1);
      const stored = JSON.parse((await secrets.resolveSecret(names[0] as string)).reveal()) as {
        refreshToken?: string;
      };
      expect(stored.refreshToken).toBeDefined();
      const revoked = await fetch(`${shortLived.issuer}/token/revocation`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ token: stored.refreshToken as string, client_id: CLIENTS.mcpmgrPublic.client_id }),
      });
      expect(revoked.status).toBe(200);
      await Bun.sleep(2_500);
      const second = await spawnUntil(
        [process.execPath, CLI_ENTRY, "proxy", "b", ...args],
        /^(http:\/\/127\.0\.0\.1:\d+\/auth\?\S+)$/m,
        { env: { MCPMGR_HOME: home6 }, timeoutMs: 30_000 },
      );
      try {
        expect(second.output()).toContain("the grant was revoked or expired, logging in again");
        expect(await completeLogin(second.match[1] as string)).toBe(200);
        expect(await listTools(await until(() => clientUrl(second.output()), "the second proxy's URL"))).toContain(
          "test_simple_text",
        );
      } finally {
        await second.stop();
      }
    } finally {
      await protectedRemote.stop();
      await shortLived.stop();
    }
  }, 120_000);

  test("no client credentials: mcpmgr registers itself (RFC 7591) and logs in", async () => {
    const home3 = await mkdtemp(join(scratch, "home-dcr-"));
    const proxy = await startAuthenticatedProxy(
      [
        "--remote-auth",
        "--remote-auth-issuer",
        auth.issuer,
        "--remote-auth-resource",
        JWT_RESOURCE,
        "--remote-auth-callback-port",
        String(CALLBACK_PORTS[2]),
        "--remote-auth-skip-browser",
      ],
      { home: home3, expectLogin: true },
    );
    try {
      expect(proxy.output()).toContain("registered mcpmgr as OAuth client");
      expect(new URL(proxy.login as string).searchParams.get("client_id")).not.toBe(CLIENTS.mcpmgr.client_id);
      expect(await listTools(proxy.url)).toContain("test_simple_text");
    } finally {
      await proxy.stop();
    }
  }, 120_000);

  test("auto-detection: --remote-auth-client-id alone finds the authorization server from the remote's 401 (RFC 9728)", async () => {
    const home4 = await mkdtemp(join(scratch, "home-auto-"));
    // A remote that names itself by its own URL (no --resource-url) and accepts tokens for it.
    const port = await freePort();
    const self = `http://127.0.0.1:${port}/mcp`;
    const selfNamed = await startProxy(fixture.url, [
      "--port",
      String(port),
      "--oidc-issuer",
      auth.issuer,
      "--oidc-audience",
      self,
      ...LOCAL_DEV,
    ]);
    const proxy = await startAuthenticatedProxy(
      [
        "--remote-auth-client-id",
        CLIENTS.mcpmgr.client_id,
        "--remote-auth-client-secret-file",
        secretFile,
        "--remote-auth-callback-port",
        String(CALLBACK_PORTS[0]),
        "--remote-auth-skip-browser",
      ],
      { home: home4, expectLogin: true, target: self },
    );
    try {
      expect(proxy.output()).toContain(`its authorization server is ${auth.issuer}`);
      // The resource came from the remote's metadata.
      expect(new URL(proxy.login as string).searchParams.get("resource")).toBe(self);
      expect(await listTools(proxy.url)).toContain("test_simple_text");
    } finally {
      await proxy.stop();
      await selfNamed.stop();
    }
    // `secret list` says what each record is for: the grant, and the first server of the user's client.
    const issuer = auth.issuer.replace(/\/$/, "");
    const lines = (await describedSecrets(home4)).map((line) => line.replace(/^oauth-[0-9a-f]{32} {2}/, "NAME  "));
    expect(lines.sort()).toEqual(
      [
        `NAME  OAuth login grant: remote ${self}, authorization server ${issuer}`,
        `NAME  first authorization server of the client '${CLIENTS.mcpmgr.client_id}': remote ${self}, authorization server ${issuer}`,
      ].sort(),
    );
  }, 120_000);

  test("a read-only secrets store (the environment provider): each record not saved is said once, by what it is", async () => {
    const home = await mkdtemp(join(scratch, "home-read-only-"));
    const port = await freePort();
    const self = `http://127.0.0.1:${port}/mcp`;
    const selfNamed = await startProxy(fixture.url, [
      "--port",
      String(port),
      "--oidc-issuer",
      auth.issuer,
      "--oidc-audience",
      self,
      ...LOCAL_DEV,
    ]);
    const proxy = await startAuthenticatedProxy(
      [
        "--remote-auth-client-id",
        CLIENTS.mcpmgr.client_id,
        "--remote-auth-client-secret-file",
        secretFile,
        "--remote-auth-callback-port",
        String(CALLBACK_PORTS[0]),
        "--remote-auth-skip-browser",
      ],
      { home, expectLogin: true, target: self, env: { MCPMGR_SECRETS_PROVIDER: "environment" } },
    );
    try {
      expect(await listTools(proxy.url)).toContain("test_simple_text");
      const tokens = "OAuth tokens are kept in memory only";
      await until(() => (proxy.output().includes(tokens) ? true : undefined), "the tokens' warning");
      const warnings = proxy
        .output()
        .split("\n")
        .filter((line) => line.startsWith("[warn]"));
      // The client's first server and the tokens: two records, two warnings, each naming what it lost.
      expect(warnings).toHaveLength(2);
      expect(warnings[0]).toContain(
        "the authorization server the --remote-auth-client-id was first used with is not remembered for the next start",
      );
      expect(warnings[0]).not.toContain(tokens);
      expect(warnings[1]).toContain(tokens);
      expect(warnings.join("\n")).toContain("the environment secrets provider is read-only");
    } finally {
      await proxy.stop();
      await selfNamed.stop();
    }
  }, 120_000);

  test("two mcpmgr processes logging in at once on the same callback port both succeed", async () => {
    const homes = [await mkdtemp(join(scratch, "home-a-")), await mkdtemp(join(scratch, "home-b-"))];
    const args = [
      "--target-uri",
      remote.url,
      "--remote-auth",
      "--remote-auth-issuer",
      auth.issuer,
      "--remote-auth-client-id",
      CLIENTS.mcpmgr.client_id,
      "--remote-auth-client-secret-file",
      secretFile,
      "--remote-auth-resource",
      JWT_RESOURCE,
      "--remote-auth-callback-port",
      String(CALLBACK_PORTS[1]),
      "--remote-auth-skip-browser",
      "--remote-auth-timeout",
      "30s",
    ];
    const procs = homes.map((home) =>
      spawnUntil([process.execPath, CLI_ENTRY, "proxy", "b", ...args], /^(http:\/\/127\.0\.0\.1:\d+\/auth\?\S+)$/m, {
        env: { MCPMGR_HOME: home },
        timeoutMs: 60_000,
      }),
    );
    // One waits for the other's login (they share the port): log in to whichever asks first, then the other.
    const first = await Promise.race(procs);
    expect(await completeLogin(first.match[1] as string)).toBe(200);
    const both = await Promise.all(procs);
    const second = both.find((p) => p !== first) as (typeof both)[number];
    expect(await completeLogin(second.match[1] as string)).toBe(200);
    try {
      for (const p of both)
        expect(await listTools(await until(() => clientUrl(p.output()), "a client URL"))).toContain("test_simple_text");
    } finally {
      await Promise.all(both.map((p) => p.stop()));
    }
  }, 120_000);

  test("a login nobody completes ends with a clear timeout error", async () => {
    const home5 = await mkdtemp(join(scratch, "home-timeout-"));
    const { code, stderr } = await proxyUntilExit(
      remote.url,
      [
        "--remote-auth",
        "--remote-auth-issuer",
        auth.issuer,
        "--remote-auth-client-id",
        CLIENTS.mcpmgr.client_id,
        "--remote-auth-client-secret-file",
        secretFile,
        "--remote-auth-callback-port",
        String(CALLBACK_PORTS[2]),
        "--remote-auth-timeout",
        "1s",
      ],
      home5,
    );
    expect(code).toBe(1);
    expect(stderr).toContain("did not complete within 1 s");
    expect(stderr).toContain("--remote-auth-timeout");
  }, 60_000);
});

test("token exchange (RFC 8693): the client's token is exchanged for one the remote accepts", async () => {
  const B_RESOURCE = "https://b.example.test/mcp";
  const secret = join(scratch, "exchanger-secret");
  await writeFile(secret, CLIENTS.exchanger.client_secret);
  const proxy = await startProxy(remote.url, [
    "--oidc-issuer",
    auth.issuer,
    "--oidc-audience",
    B_RESOURCE,
    ...LOCAL_DEV,
    "--token-exchange-url",
    `${auth.issuer}/token`,
    "--token-exchange-client-id",
    CLIENTS.exchanger.client_id,
    "--token-exchange-client-secret-file",
    secret,
    "--token-exchange-audience",
    JWT_RESOURCE,
  ]);
  try {
    const clientToken = await auth.token({ resource: B_RESOURCE });
    const client = new Client({ name: "exchange-test", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(proxy.url), {
        requestInit: { headers: { authorization: `Bearer ${clientToken}` } },
      }),
    );
    expect((await client.listTools()).tools.map((t) => t.name)).toContain("test_simple_text");
    await client.close();
    expect(auth.grants.get("urn:ietf:params:oauth:grant-type:token-exchange") ?? 0).toBeGreaterThan(0);
  } finally {
    await proxy.stop();
  }
}, 60_000);

test("mcpmgr run URL --remote-auth (detached): run shows the supervisor's login URL, waits for the login, then serves", async () => {
  const home = await mkdtemp(join(scratch, "home-run-"));
  const env = { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home };
  const proc = Bun.spawn(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      remote.url,
      "--name",
      "oauth-remote",
      "--remote-auth",
      "--remote-auth-issuer",
      auth.issuer,
      "--remote-auth-client-id",
      CLIENTS.mcpmgrPublic.client_id,
      "--remote-auth-resource",
      JWT_RESOURCE,
      "--remote-auth-callback-port",
      String(CALLBACK_PORTS[0]),
      "--remote-auth-skip-browser",
      "--remote-auth-timeout",
      "60s",
    ],
    { cwd: REPO_ROOT, env, stdout: "pipe", stderr: "pipe" },
  );
  let stderr = "";
  void (async () => {
    for await (const chunk of proc.stderr) stderr += new TextDecoder().decode(chunk);
  })();
  try {
    const login = await until(() => loginUrl(stderr), "the login URL relayed by run", 60_000);
    expect(await completeLogin(login)).toBe(200);
    const [code, stdout] = await Promise.all([proc.exited, new Response(proc.stdout).text()]);
    expect(code).toBe(0);
    expect(await listTools(stdout.trim())).toContain("test_simple_text");
    // The grant is described by `secret list` (no token in it), kept by `rm`, which names it and
    // the command that forgets it; that command forgets it.
    const [described] = await describedSecrets(home);
    const name = described?.split("  ")[0] as string;
    expect(described).toBe(
      `${name}  OAuth login grant: remote ${remote.url}, authorization server ${auth.issuer.replace(/\/$/, "")}`,
    );
    const stored = JSON.parse((await mcpmgr(home, ["secret", "get", name])).stdout) as Record<string, string>;
    expect(stored.accessToken?.length).toBeGreaterThan(10);
    for (const value of [stored.accessToken, stored.refreshToken]) if (value) expect(described).not.toContain(value);
    const removed = await mcpmgr(home, ["rm", "oauth-remote"]);
    expect(removed.code).toBe(0);
    const forget = `mcpmgr secret delete ${name}`;
    expect(removed.stderr).toContain(
      `the OAuth login of ${remote.url} stays in the secrets store for every workload and proxy of that remote (${name}); to forget it: ${forget}`,
    );
    expect(await describedSecrets(home)).toEqual([described as string]);
    expect((await mcpmgr(home, forget.split(" ").slice(1))).code).toBe(0);
    expect(await describedSecrets(home)).toEqual([]);
  } finally {
    proc.kill();
    Bun.spawnSync([process.execPath, CLI_ENTRY, "rm", "oauth-remote"], { cwd: REPO_ROOT, env });
  }
}, 120_000);

test("token exchange with --token-exchange-header-name puts the exchanged token in that header, not in Authorization", async () => {
  const seen: Headers[] = [];
  const upstream = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req) => (seen.push(req.headers), Response.json({ jsonrpc: "2.0", id: 1, result: {} })),
  });
  const B_RESOURCE = "https://b.example.test/mcp";
  const proxy = await startProxy(`http://127.0.0.1:${upstream.port}/mcp`, [
    "--oidc-issuer",
    auth.issuer,
    "--oidc-audience",
    B_RESOURCE,
    ...LOCAL_DEV,
    "--token-exchange-url",
    `${auth.issuer}/token`,
    "--token-exchange-client-id",
    CLIENTS.exchanger.client_id,
    "--token-exchange-client-secret",
    CLIENTS.exchanger.client_secret,
    "--token-exchange-audience",
    "https://downstream.example.test",
    "--token-exchange-scopes",
    "mcp:read",
    "--token-exchange-header-name",
    "X-Exchanged-Token",
  ]);
  try {
    const clientToken = await auth.token({ resource: B_RESOURCE });
    const response = await fetch(proxy.url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${clientToken}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    expect(response.status).toBe(200);
    const exchanged = seen[0]?.get("x-exchanged-token") ?? "";
    expect(seen[0]?.get("authorization")).toBeNull();
    expect(exchanged).not.toBe(clientToken);
    const claims = JSON.parse(Buffer.from(exchanged.split(".")[1] as string, "base64url").toString()) as {
      aud: string;
      act: { sub: string };
    };
    expect(claims.aud).toBe("https://downstream.example.test");
    expect(claims.act.sub).toBe(CLIENTS.exchanger.client_id);
  } finally {
    await proxy.stop();
    await upstream.stop(true);
  }
}, 60_000);

describe("a remote cannot steer mcpmgr's authentication", () => {
  const hostile = (
    metadata: (origin: string) => Record<string, unknown> | undefined,
    resourceMetadata?: (origin: string) => string,
  ) =>
    Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(req) {
        const url = new URL(req.url);
        if (url.pathname.startsWith("/.well-known/oauth-protected-resource")) {
          const doc = metadata(url.origin);
          return doc ? Response.json(doc) : new Response("no", { status: 404 });
        }
        const pointer = resourceMetadata
          ? resourceMetadata(url.origin)
          : `${url.origin}/.well-known/oauth-protected-resource/mcp`;
        return new Response("{}", {
          status: 401,
          headers: { "www-authenticate": `Bearer resource_metadata="${pointer}"` },
        });
      },
    });
  const tryProxy = (target: string) =>
    proxyUntilExit(target, ["--remote-auth-client-id", CLIENTS.mcpmgr.client_id], scratch);

  test("metadata about another resource (RFC 9728 §3.3) is refused: no token of another server is offered", async () => {
    const server = hostile(() => ({
      resource: "https://victim.example.test/mcp",
      authorization_servers: [auth.issuer],
    }));
    try {
      const { code, stderr } = await tryProxy(`http://127.0.0.1:${server.port}/mcp`);
      expect(code).toBe(1);
      expect(stderr).toContain('is about "https://victim.example.test/mcp"');
    } finally {
      await server.stop(true);
    }
  });

  test("metadata URLs with other schemes are refused, never fetched", async () => {
    const server = hostile(
      () => undefined,
      () => "file:///etc/passwd",
    );
    try {
      const { code, stderr } = await tryProxy(`http://127.0.0.1:${server.port}/mcp`);
      expect(code).toBe(1);
      expect(stderr).toContain("refusing file://");
      expect(stderr).not.toContain("root");
    } finally {
      await server.stop(true);
    }
  });

  test("an authorization server cannot write lines into mcpmgr's log (a fake login URL) through its words", async () => {
    // A remote names this authorization server; its registration answers a client_id with lines in it.
    const forged = "\n[info] Authorize mcpmgr at:\nhttp://192.0.2.1/router/reset\n";
    const as = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(req) {
        const url = new URL(req.url);
        if (url.pathname === "/register") return Response.json({ client_id: `c1${forged}` }, { status: 201 });
        return Response.json({
          issuer: url.origin,
          authorization_endpoint: `${url.origin}/authorize`,
          token_endpoint: `${url.origin}/token`,
          registration_endpoint: `${url.origin}/register`,
          response_types_supported: ["code"],
          code_challenge_methods_supported: ["S256"],
        });
      },
    });
    const server = hostile((origin) => ({
      resource: `${origin}/mcp`,
      authorization_servers: [`http://127.0.0.1:${as.port}`],
    }));
    try {
      const target = `http://127.0.0.1:${server.port}/mcp`;
      const { code, stderr } = await proxyUntilExit(target, ["--remote-auth", "--remote-auth-timeout", "2s"], scratch);
      expect(code).toBe(1);
      expect(stderr).toContain("client_id holds control characters");
      expect(stderr).not.toMatch(/^http:\/\/192\.0\.2\.1/m);
    } finally {
      await server.stop(true);
      await as.stop(true);
    }
  });

  test("a metadata document without end is read no further than 1 MiB: refused, not held in memory", async () => {
    // 256 MiB of JSON whitespace before the document, sent chunked (no length to refuse it by).
    const mebibyte = new TextEncoder().encode(" ".repeat(1024 * 1024));
    let sent = 0;
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(req) {
        const url = new URL(req.url);
        if (url.pathname.startsWith("/.well-known/oauth-protected-resource"))
          return new Response(
            new ReadableStream({
              pull(controller) {
                if (sent++ < 256) return controller.enqueue(mebibyte);
                controller.enqueue(new TextEncoder().encode(JSON.stringify({ authorization_servers: [auth.issuer] })));
                controller.close();
              },
            }),
            { headers: { "content-type": "application/json" } },
          );
        return new Response("{}", {
          status: 401,
          headers: {
            "www-authenticate": `Bearer resource_metadata="${url.origin}/.well-known/oauth-protected-resource"`,
          },
        });
      },
    });
    try {
      const { code, stderr } = await tryProxy(`http://127.0.0.1:${server.port}/mcp`);
      expect(code).toBe(1);
      expect(stderr).toContain("is larger than 1024 KiB");
      expect(sent).toBeLessThan(64);
    } finally {
      await server.stop(true);
    }
  });

  test("an authorization server with a non-https authorization endpoint is refused before any browser opens", async () => {
    const fake = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) => {
        const origin = new URL(req.url).origin;
        return Response.json({
          issuer: origin,
          authorization_endpoint: "javascript:alert(1)",
          token_endpoint: `${origin}/token`,
          response_types_supported: ["code"],
        });
      },
    });
    const server = hostile((origin) => ({
      resource: `${origin}/mcp`,
      authorization_servers: [`http://127.0.0.1:${fake.port}`],
    }));
    try {
      const { code, stderr } = await tryProxy(`http://127.0.0.1:${server.port}/mcp`);
      expect(code).toBe(1);
      expect(stderr).toContain("authorization endpoint");
      expect(stderr).not.toContain("javascript:alert");
    } finally {
      await server.stop(true);
      await fake.stop(true);
    }
  });
});

test("a background run refuses literal secrets that would be stored in its configuration", () => {
  const result = Bun.spawnSync(
    [process.execPath, CLI_ENTRY, "run", "https://remote.example.test/mcp", "--remote-auth-bearer-token", "abc"],
    { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: scratch } },
  );
  expect(result.exitCode).toBe(2);
  expect(result.stderr.toString()).toContain("--remote-auth-bearer-token-file");
});
