/**
 * A remote that names a new scope in each `403 insufficient_scope` (review 12, F16): mcpmgr
 * starts a bounded number of step-up logins and then gives the client a clear error; a
 * background workload starts none, and its user's `restart` logs in for the scopes. The remote
 * is `mcpmgr proxy --oidc-*` in front of the conformance fixture, behind a small real HTTP
 * server that plays the hostile part; the authorization server is the real oidc-provider, and
 * the test plays the user who completes every login mcpmgr shows.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { MAX_REMOTE_LOGINS } from "../../src/auth/outgoing/login-policy.ts";
import { CALLBACK_PORTS, loginUrls, playUser } from "../support/auth-server.ts";
import {
  type ProtectedRemote,
  publicLogin,
  startGate,
  startProtectedRemote,
  until,
} from "../support/protected-remote.ts";
import { initializeAnswer } from "../support/raw-session.ts";
import { CLI_ENTRY, REPO_ROOT, spawnUntil } from "../support/processes.ts";

setDefaultTimeout(120_000);

let setup: ProtectedRemote;
/** In front of the protected remote: once `escalate` is set, each MCP request gets a 403 naming a new scope. */
let gate: ReturnType<typeof Bun.serve>;
let escalate = false;
let asked = 0;

beforeAll(async () => {
  setup = await startProtectedRemote("mcpmgr-step-up-");
  gate = startGate(setup.remote.url, (_req, body) => {
    if (!escalate || body === undefined) return undefined;
    asked++;
    return new Response(null, {
      status: 403,
      headers: {
        "www-authenticate": `Bearer error="insufficient_scope", scope="mcp:read extra:${asked}", error_description="more scope needed"`,
      },
    });
  });
}, 60_000);

afterAll(async () => {
  await gate?.stop(true);
  await setup?.stop();
});

/** An MCP request (an initialize: needs no session) through mcpmgr, answered whole. */
const ping = (url: string) => initializeAnswer(url, "step-up-test");

const outgoing = (port: number) => publicLogin(setup, port, "20s");

test("a remote naming a new scope in each 403 gets a few step-up logins, then the client a clear error and no login", async () => {
  escalate = false;
  const home = await mkdtemp(join(setup.scratch, "home-"));
  const proxy = await spawnUntil(
    [
      process.execPath,
      CLI_ENTRY,
      "proxy",
      "b",
      "--target-uri",
      `http://127.0.0.1:${gate.port}/mcp`,
      ...outgoing(CALLBACK_PORTS[1]),
    ],
    /^http:\/\/127\.0\.0\.1:\d+\/auth\?/m,
    { env: { MCPMGR_HOME: home }, timeoutMs: 30_000 },
  );
  const player = playUser(proxy.output);
  try {
    const url = await until(() => /^(http:\/\/127\.0\.0\.1:\d+\/mcp)$/m.exec(proxy.output())?.[1], "the proxy's URL");
    expect((await ping(url)).status).toBe(200);
    escalate = true;
    let last = { status: 0, text: "" };
    for (let i = 0; i < 2 * MAX_REMOTE_LOGINS; i++) last = await ping(url);
    expect(last.status).toBe(502);
    expect(last.text).toContain("no login was started");
    // The first login, then the step-ups the budget allows: no more pages opened for the remote.
    expect(loginUrls(proxy.output())).toHaveLength(1 + MAX_REMOTE_LOGINS);
    expect(asked).toBeGreaterThan(MAX_REMOTE_LOGINS + 1);
  } finally {
    escalate = false;
    await player.stop();
    await proxy.stop();
  }
});

test("a background workload starts no step-up login; the client is told to restart it, and restart logs in for the scopes", async () => {
  escalate = false;
  const home = await mkdtemp(join(setup.scratch, "home-run-"));
  const env = { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home };
  // run and restart show the supervisor's login URL, wait for it, then print the workload's URL and exit.
  const cli = async (args: string[]) => {
    const running = await spawnUntil([process.execPath, CLI_ENTRY, ...args], /^http:\/\/127\.0\.0\.1:\d+\/auth\?/m, {
      env,
      timeoutMs: 60_000,
    });
    const player = playUser(running.output);
    try {
      const url = await until(
        () => /^(http:\/\/127\.0\.0\.1:\d+\/mcp)$/m.exec(running.output())?.[1],
        "the workload's URL",
        60_000,
      );
      await running.stop();
      return { url, output: running.output() };
    } finally {
      await player.stop();
    }
  };
  const name = "step-up-remote";
  const target = `http://127.0.0.1:${gate.port}/mcp`;
  try {
    const { url, output } = await cli(["run", target, "--name", name, ...outgoing(CALLBACK_PORTS[2])]);
    expect(loginUrls(output)).toHaveLength(1);
    expect((await ping(url)).status).toBe(200);
    escalate = true;
    const firstAsked = asked + 1;
    const refused = await ping(url);
    expect(refused.status).toBe(502);
    expect(refused.text).toContain("does not start a login by itself");
    expect(refused.text).toContain(`mcpmgr restart ${name}`);
    await ping(url);
    const proxyLog = () =>
      Bun.spawnSync([process.execPath, CLI_ENTRY, "logs", name, "--proxy"], { cwd: REPO_ROOT, env }).stdout.toString();
    // The supervisor logged in once, at its start (the URL `run` showed), and not since.
    expect(loginUrls(proxyLog())).toHaveLength(1);
    expect(proxyLog()).toContain("does not start a login by itself");

    // The user restarts it: the login for the scope the remote asked for is shown by restart.
    escalate = false;
    const restart = await cli(["restart", name]);
    const logins = loginUrls(restart.output);
    expect(logins).toHaveLength(1);
    expect(new URL(logins[0] as string).searchParams.get("scope")?.split(" ")).toContain(`extra:${firstAsked}`);
    expect((await ping(restart.url)).status).toBe(200);
  } finally {
    escalate = false;
    Bun.spawnSync([process.execPath, CLI_ENTRY, "rm", name], { cwd: REPO_ROOT, env });
  }
});
