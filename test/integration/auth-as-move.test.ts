/**
 * A remote whose RFC 9728 metadata names another authorization server (MCP 2026-07-28, SEP-2352),
 * or that asks for a login only after the workload started: a foreground run follows a one-time
 * move with one new registration and login, and nothing of one server reaches the other; a
 * remote naming another server at each 401 gets a bounded number of registrations and logins; a
 * background workload starts none and its client is told to restart it. Two real oidc-provider
 * servers (A and B), each guarding a real remote (`mcpmgr proxy --oidc-*` in front of the
 * conformance fixture); a gate in front of them plays the remote that moves, and the test plays
 * the user, completing (or only opening) the logins mcpmgr shows.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { deferredLoginKey } from "../../src/auth/outgoing/grant-store.ts";
import { MAX_REMOTE_LOGINS } from "../../src/auth/outgoing/login-policy.ts";
import {
  type AuthServer,
  CALLBACK_PORTS,
  CLIENTS,
  loginUrls,
  playUser,
  startAuthServer,
} from "../support/auth-server.ts";
import { type RunningFixture, startConformanceServer } from "../support/conformance.ts";
import { CLI_ENTRY, REPO_ROOT, spawnUntil, startProxy } from "../support/processes.ts";
import { LOCAL_DEV, until } from "../support/protected-remote.ts";
import { initializeAnswer } from "../support/raw-session.ts";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";

setDefaultTimeout(120_000);

const CLIENT_URL = /^(http:\/\/127\.0\.0\.1:\d+\/mcp)$/m;

type Mode = "open" | "a" | "b" | "flip" | "lazy-b";

let authA: AuthServer;
let authB: AuthServer;
let fixture: RunningFixture;
let remoteA: Awaited<ReturnType<typeof startProxy>>;
let remoteB: Awaited<ReturnType<typeof startProxy>>;
let gate: ReturnType<typeof Bun.serve>;
let gateUrl: string;
let scratch: string;
/**
 * What the gate does with a request: "open" forwards it to the fixture (a remote that does not
 * ask for authentication), "a"/"b" to the remote that A or B guards, "flip" answers each MCP
 * request with a 401 whose metadata names the other server than the last one did.
 */
let mode: Mode = "a";
let flips = 0;
/** How often the remote's RFC 9728 metadata was asked for at the gate. */
let metadataFetches = 0;

const metadata = (issuer: string) =>
  Response.json({ resource: gateUrl, authorization_servers: [issuer], scopes_supported: ["mcp:read"] });

beforeAll(async () => {
  [authA, authB, fixture] = await Promise.all([startAuthServer(), startAuthServer(), startConformanceServer()]);
  scratch = mkdtempSync(join(tmpdir(), "mcpmgr-as-move-"));
  gate = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      if (url.pathname.startsWith("/flip/") || url.pathname.startsWith("/.well-known/oauth-protected-resource"))
        metadataFetches++;
      if (url.pathname === "/flip/a") return metadata(authA.issuer);
      if (url.pathname === "/flip/b") return metadata(authB.issuer);
      const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
      if (mode === "flip" && url.pathname === "/mcp" && req.method === "POST") {
        flips++;
        const named = flips % 2 === 1 ? "b" : "a";
        return new Response(null, {
          status: 401,
          headers: { "www-authenticate": `Bearer resource_metadata="${url.origin}/flip/${named}"` },
        });
      }
      // "lazy-b": a remote that answers server/discover (mcpmgr's probe at the start) openly, and asks B's login for the rest.
      const open = mode === "open" || (mode === "lazy-b" && req.headers.get("mcp-method") === "server/discover");
      const target = open ? fixture.url : mode === "b" || mode === "lazy-b" ? remoteB.url : remoteA.url;
      const headers = new Headers(req.headers);
      headers.delete("host");
      return fetch(new URL(url.pathname + url.search, target), {
        method: req.method,
        headers,
        ...(body ? { body } : {}),
        redirect: "manual",
      });
    },
  });
  gateUrl = `http://127.0.0.1:${gate.port}/mcp`;
  // Each remote names itself by the gate's URL (what mcpmgr is pointed at) and trusts its own server.
  const guarded = (auth: AuthServer) =>
    startProxy(fixture.url, [
      "--oidc-issuer",
      auth.issuer,
      "--oidc-audience",
      gateUrl,
      "--resource-url",
      gateUrl,
      ...LOCAL_DEV,
    ]);
  [remoteA, remoteB] = await Promise.all([guarded(authA), guarded(authB)]);
}, 60_000);

afterAll(async () => {
  await gate?.stop(true);
  await Promise.all([remoteA?.stop(), remoteB?.stop()]);
  await fixture?.stop();
  await Promise.all([authA?.stop(), authB?.stop()]);
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** An MCP request (an initialize: needs no session) through mcpmgr, answered whole. */
const ping = (url: string) => initializeAnswer(url, "as-move-test");

const at = (auth: AuthServer, path: string) => auth.seen.filter((r) => r.path === path).length;
/** The discovery documents (RFC 8414, OpenID) `auth` was asked for. */
const discoveries = (auth: AuthServer) => auth.seen.filter((r) => r.path.startsWith("/.well-known/")).length;
const loginsAt = (auth: AuthServer, output: string) =>
  loginUrls(output).filter((login) => login.startsWith(`${auth.issuer}/`)).length;

/** The tokens and client ids `auth` gave out (its /token and /reg answers). */
function issuedBy(auth: AuthServer): string[] {
  const values: string[] = [];
  for (const { answer } of auth.seen) {
    if (!answer) continue;
    const body = JSON.parse(answer) as Record<string, unknown>;
    for (const key of ["access_token", "refresh_token", "id_token", "client_id", "client_secret"])
      if (typeof body[key] === "string") values.push(body[key] as string);
  }
  return values;
}

/** The names in the secrets store of the mcpmgr home in `env`. */
function secretNames(env: Record<string, string | undefined>): string[] {
  const listed = Bun.spawnSync([process.execPath, CLI_ENTRY, "secret", "list", "--format", "json"], {
    cwd: REPO_ROOT,
    env,
  });
  expect(listed.exitCode).toBe(0);
  return JSON.parse(listed.stdout.toString()) as string[];
}

/** What reached `auth`, as text: every request's URL, Authorization, parameters and client. */
const reached = (auth: AuthServer) => auth.seen.map((r) => r.request).join("\n");

const FIRST_LOGIN = /^http:\/\/127\.0\.0\.1:\d+\/auth\?/m;

/**
 * `mcpmgr proxy NAME` in front of the gate in the mcpmgr home `home`, its login pages left to the test
 * (browser skipped); resolves once it has printed its first login URL. `client`: the client options.
 */
function proxyBehindGate(home: string, name: string, client: string[], callbackPort: number, timeout: string) {
  const args = [
    process.execPath,
    CLI_ENTRY,
    "proxy",
    name,
    "--target-uri",
    gateUrl,
    ...client,
    "--remote-auth-callback-port",
    String(callbackPort),
    "--remote-auth-skip-browser",
    "--remote-auth-timeout",
    timeout,
  ];
  return spawnUntil(args, FIRST_LOGIN, { env: { MCPMGR_HOME: home }, timeoutMs: 30_000 });
}

test("a foreground proxy follows a one-time move: one new registration and login; nothing of one server reaches the other", async () => {
  mode = "a";
  const home = await mkdtemp(join(scratch, "home-move-"));
  const secretFile = join(scratch, "secret-move");
  writeFileSync(secretFile, CLIENTS.mcpmgr.client_secret);
  const [regA, regB, authA0, authB0] = [at(authA, "/reg"), at(authB, "/reg"), at(authA, "/auth"), at(authB, "/auth")];
  // The user's own client, for the server the remote names at the start (found from its 401).
  const proxy = await proxyBehindGate(
    home,
    "b",
    ["--remote-auth-client-id", CLIENTS.mcpmgr.client_id, "--remote-auth-client-secret-file", secretFile],
    CALLBACK_PORTS[0],
    "20s",
  );
  const player = playUser(proxy.output);
  try {
    const url = await until(() => CLIENT_URL.exec(proxy.output())?.[1], "the proxy's URL");
    expect((await ping(url)).status).toBe(200);
    mode = "b";
    const moved = await ping(url);
    expect(moved.status).toBe(200);
    expect(proxy.output()).toContain(`now names ${authB.issuer}/ as its authorization server`);
    for (let i = 0; i < 3; i++) expect((await ping(url)).status).toBe(200);
    // Back to A: its grant is still there, no login.
    mode = "a";
    expect((await ping(url)).status).toBe(200);
    expect(loginsAt(authA, proxy.output())).toBe(1);
    expect(loginsAt(authB, proxy.output())).toBe(1);
    // The user's client was A's: at B mcpmgr registered itself, once.
    expect(at(authA, "/reg") - regA).toBe(0);
    expect(at(authB, "/reg") - regB).toBe(1);
    expect(at(authA, "/auth") - authA0).toBe(1);
    expect(at(authB, "/auth") - authB0).toBe(1);
    // What reached A holds the user's client (the recording sees credentials) — and nothing of B's;
    // what reached B holds nothing of A's: neither the user's client nor a token A issued.
    const basic = `Basic ${btoa(`${CLIENTS.mcpmgr.client_id}:${CLIENTS.mcpmgr.client_secret}`)}`;
    expect(reached(authA)).toContain(basic);
    expect(reached(authB)).not.toContain(CLIENTS.mcpmgr.client_id);
    expect(reached(authB)).not.toContain(basic);
    for (const value of issuedBy(authA)) expect(reached(authB)).not.toContain(value);
    for (const value of issuedBy(authB)) expect(reached(authA)).not.toContain(value);
    expect(issuedBy(authB).length).toBeGreaterThan(1);
  } finally {
    mode = "a";
    await player.stop();
    await proxy.stop();
  }
});

test("a remote naming another authorization server at each 401 gets one registration and a bounded number of logins there", async () => {
  mode = "a";
  const home = await mkdtemp(join(scratch, "home-flip-"));
  const regB = at(authB, "/reg");
  const authB0 = at(authB, "/auth");
  // No client given: mcpmgr registers at each server. The user logs in at A; B's pages are opened and left.
  const proxy = await proxyBehindGate(home, "b", ["--remote-auth"], CALLBACK_PORTS[1], "1s");
  const player = playUser(proxy.output, (login) => login.startsWith(`${authA.issuer}/`));
  try {
    const url = await until(() => CLIENT_URL.exec(proxy.output())?.[1], "the proxy's URL");
    expect((await ping(url)).status).toBe(200);
    mode = "flip";
    flips = 0;
    const answers: { status: number; text: string }[] = [];
    for (let i = 0; i < MAX_REMOTE_LOGINS + 3; i++) answers.push(await ping(url));
    expect(answers.every((answer) => answer.status === 502)).toBe(true);
    // Past the budget, each request is told at once that no login was started.
    for (const answer of answers.slice(MAX_REMOTE_LOGINS)) expect(answer.text).toContain("no login was started");
    expect(flips).toBeGreaterThan(2 * MAX_REMOTE_LOGINS);
    // One registration at B (kept though no login there completed), and no more logins than the budget.
    expect(at(authB, "/reg") - regB).toBe(1);
    expect(loginsAt(authB, proxy.output())).toBe(MAX_REMOTE_LOGINS);
    expect(at(authB, "/auth") - authB0).toBe(MAX_REMOTE_LOGINS);
    expect(proxy.output()).toContain("no login was started");
    // The refusal stands for a while: further 401s are refused without fetching the metadata or discovery again.
    const fetched = [metadataFetches, discoveries(authA), discoveries(authB)];
    for (let i = 0; i < 3; i++) {
      const again = await ping(url);
      expect(again.status).toBe(502);
      expect(again.text).toContain("no login was started");
    }
    expect([metadataFetches, discoveries(authA), discoveries(authB)]).toEqual(fetched);
  } finally {
    mode = "a";
    await player.stop();
    await proxy.stop();
  }
});

test("the user's client stays with its first server across runs: started again after the remote moved, mcpmgr registers itself at the new server", async () => {
  mode = "a";
  const home = await mkdtemp(join(scratch, "home-client-home-"));
  const secretFile = join(scratch, "secret-client-home");
  writeFileSync(secretFile, CLIENTS.mcpmgr.client_secret);
  const client = ["--remote-auth-client-id", CLIENTS.mcpmgr.client_id, "--remote-auth-client-secret-file", secretFile];
  // First run: the remote names A, where the user's client is registered; the user logs in.
  const first = await proxyBehindGate(home, "client-home", client, CALLBACK_PORTS[1], "20s");
  const player = playUser(first.output);
  try {
    await until(() => CLIENT_URL.exec(first.output())?.[1], "the proxy's URL");
  } finally {
    await player.stop();
    await first.stop();
  }
  expect(loginsAt(authA, first.output())).toBe(1);
  // The remote names B now; the proxy is started again (a restart, a reboot): B does not get the user's client.
  mode = "b";
  const regB = at(authB, "/reg");
  const second = await proxyBehindGate(home, "client-home", client, CALLBACK_PORTS[1], "20s");
  try {
    const [login] = loginUrls(second.output());
    expect(login).toStartWith(`${authB.issuer}/`);
    expect(second.output()).toContain(`mcpmgr registers itself at ${authB.issuer} instead`);
    expect(at(authB, "/reg") - regB).toBe(1);
    expect(reached(authB)).not.toContain(CLIENTS.mcpmgr.client_id);
  } finally {
    mode = "a";
    await second.stop();
  }
});

test("a background workload starts no login when the remote first asks late or moves: the client is told to restart it, and restart logs in", async () => {
  mode = "open";
  const home = await mkdtemp(join(scratch, "home-run-"));
  const env = { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home };
  const name = "as-move-remote";
  /** run/restart: the workload's URL, after the user completed the login it showed (if any). */
  const cli = async (args: string[]) => {
    const running = await spawnUntil([process.execPath, CLI_ENTRY, ...args], CLIENT_URL, { env, timeoutMs: 60_000 });
    await running.stop();
    return { url: running.match[1] as string, output: running.output() };
  };
  const cliWithLogin = async (args: string[]) => {
    const running = await spawnUntil([process.execPath, CLI_ENTRY, ...args], FIRST_LOGIN, {
      env,
      timeoutMs: 60_000,
    });
    const player = playUser(running.output);
    try {
      const url = await until(() => CLIENT_URL.exec(running.output())?.[1], "the workload's URL", 60_000);
      await running.stop();
      return { url, output: running.output() };
    } finally {
      await player.stop();
    }
  };
  const proxyLog = () =>
    Bun.spawnSync([process.execPath, CLI_ENTRY, "logs", name, "--proxy"], { cwd: REPO_ROOT, env }).stdout.toString();
  const counts = () => [at(authA, "/reg"), at(authB, "/reg"), at(authA, "/auth"), at(authB, "/auth")];
  try {
    // The remote does not ask at the start: no login.
    const started = await cli([
      "run",
      gateUrl,
      "--name",
      name,
      "--remote-auth",
      "--remote-auth-callback-port",
      String(CALLBACK_PORTS[2]),
      "--remote-auth-skip-browser",
      "--remote-auth-timeout",
      "15s",
    ]);
    expect(loginUrls(started.output)).toHaveLength(0);
    expect((await ping(started.url)).status).toBe(200);

    // It asks now (B): nothing is registered or opened at B; the client is told what to do.
    mode = "b";
    const before = counts();
    const late = await ping(started.url);
    expect(late.status).toBe(502);
    expect(late.text).toContain("a background workload does not start a login by itself");
    expect(late.text).toContain(`mcpmgr restart ${name}`);
    expect(proxyLog()).toContain(`mcpmgr restart ${name}`);
    expect(counts()).toEqual(before);
    expect(loginUrls(proxyLog())).toHaveLength(0);
    // Asked again, it refuses again without fetching the remote's metadata or B's discovery document.
    const fetched = [metadataFetches, discoveries(authB)];
    for (let i = 0; i < 3; i++) {
      const again = await ping(started.url);
      expect(again.status).toBe(502);
      expect(again.text).toContain(`mcpmgr restart ${name}`);
    }
    expect([metadataFetches, discoveries(authB)]).toEqual(fetched);

    // The user restarts it: restart shows B's login.
    const first = await cliWithLogin(["restart", name]);
    expect(loginUrls(first.output).every((login) => login.startsWith(`${authB.issuer}/`))).toBe(true);
    expect((await ping(first.url)).status).toBe(200);

    // It moves to A: no registration, no login there; the client is told to restart.
    mode = "a";
    const beforeMove = counts();
    const move = await ping(first.url);
    expect(move.status).toBe(502);
    expect(move.text).toContain(`now names ${authA.issuer}/ as its authorization server`);
    expect(move.text).toContain(`mcpmgr restart ${name}`);
    expect(counts()).toEqual(beforeMove);
    expect(proxyLog()).toContain(`now names ${authA.issuer}/ as its authorization server`);

    const second = await cliWithLogin(["restart", name]);
    expect(loginUrls(second.output).every((login) => login.startsWith(`${authA.issuer}/`))).toBe(true);
    expect((await ping(second.url)).status).toBe(200);
    // Nothing of B's reached A, nor of A's B.
    for (const value of issuedBy(authB)) expect(reached(authA)).not.toContain(value);
    for (const value of issuedBy(authA)) expect(reached(authB)).not.toContain(value);
  } finally {
    mode = "a";
    Bun.spawnSync([process.execPath, CLI_ENTRY, "rm", name], { cwd: REPO_ROOT, env });
  }
});

test("a background workload whose remote asks for a login only past the start is logged in by the restart the refusal advises", async () => {
  mode = "lazy-b";
  const home = await mkdtemp(join(scratch, "home-lazy-"));
  const env = { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home };
  const name = "as-lazy-remote";
  try {
    const run = await spawnUntil(
      [
        process.execPath,
        CLI_ENTRY,
        "run",
        gateUrl,
        "--name",
        name,
        "--remote-auth",
        "--remote-auth-callback-port",
        String(CALLBACK_PORTS[2]),
        "--remote-auth-skip-browser",
        "--remote-auth-timeout",
        "15s",
      ],
      CLIENT_URL,
      { env, timeoutMs: 60_000 },
    );
    await run.stop();
    const url = run.match[1] as string;
    // Its probe at the start was answered: no login then; the first request asks for one.
    expect(loginUrls(run.output())).toHaveLength(0);
    const refused = await ping(url);
    expect(refused.status).toBe(502);
    expect(refused.text).toContain(`mcpmgr restart ${name}`);
    // The refused login's challenge is remembered for the next start.
    const remembered = deferredLoginKey(new URL(gateUrl));
    expect(secretNames(env)).toContain(remembered);
    // `secret list` says what it is, for which remote and server (never the challenge itself).
    const listed = Bun.spawnSync([process.execPath, CLI_ENTRY, "secret", "list"], { cwd: REPO_ROOT, env });
    expect(listed.stdout.toString().split("\n")).toContain(
      `${remembered}  remembered login challenge: remote ${gateUrl}, authorization server ${authB.issuer.replace(/\/$/, "")}`,
    );
    // The restart it advises shows B's login, and the workload is served once the user logged in.
    const restart = await spawnUntil([process.execPath, CLI_ENTRY, "restart", name], FIRST_LOGIN, {
      env,
      timeoutMs: 30_000,
    });
    const player = playUser(restart.output);
    try {
      const restarted = await until(() => CLIENT_URL.exec(restart.output())?.[1], "the workload's URL", 60_000);
      expect(loginUrls(restart.output()).every((login) => login.startsWith(`${authB.issuer}/`))).toBe(true);
      expect((await ping(restarted)).status).toBe(200);
      // Once the restart logged in from it, the challenge is forgotten: a remote that stops asking gets no login.
      expect(secretNames(env)).not.toContain(remembered);
    } finally {
      await player.stop();
      await restart.stop();
    }
  } finally {
    mode = "a";
    Bun.spawnSync([process.execPath, CLI_ENTRY, "rm", name], { cwd: REPO_ROOT, env });
  }
});
