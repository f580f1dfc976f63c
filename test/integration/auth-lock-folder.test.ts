/**
 * The OAuth lock folder (XDG_RUNTIME_DIR/mcpmgr, outside MCPMGR_HOME) is refused when another user
 * could reach it (docs/security.md S11) at each refresh, not only at the start: a workload that
 * started with tokens still fresh has not made the folder yet, and another user who makes it
 * before the first refresh (hours later, for a real token) could hold that refresh's lock or break
 * it. Real processes: `mcpmgr proxy` logging in to a remote (`mcpmgr proxy --oidc-*` in front of
 * the conformance fixture) at a real oidc-provider whose access tokens live 2 s; the other user's
 * folder is a real one, chowned to another uid (the tests run as root).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, rmSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AuthServer,
  CALLBACK_PORTS,
  CLIENTS,
  completeLogin,
  JWT_RESOURCE,
  startAuthServer,
} from "../support/auth-server.ts";
import { type RunningFixture, startConformanceServer } from "../support/conformance.ts";
import { CLI_ENTRY, spawnUntil, startProxy } from "../support/processes.ts";
import { LOCAL_DEV, until } from "../support/protected-remote.ts";

setDefaultTimeout(90_000);

const OTHER = 61234;
let auth: AuthServer;
let fixture: RunningFixture;
let remote: Awaited<ReturnType<typeof startProxy>>;
let scratch: string;

beforeAll(async () => {
  auth = await startAuthServer({ accessTokenTtl: 2 });
  fixture = await startConformanceServer();
  remote = await startProxy(fixture.url, ["--oidc-issuer", auth.issuer, "--oidc-audience", JWT_RESOURCE, ...LOCAL_DEV]);
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-lock-folder-"));
}, 60_000);

afterAll(async () => {
  await remote?.stop();
  await fixture?.stop();
  await auth?.stop();
  await rm(scratch, { recursive: true, force: true });
});

const clientUrl = /^(http:\/\/127\.0\.0\.1:\d+\/mcp)$/m;

test("a lock folder another user made after the start is refused at the refresh, which does not happen", async () => {
  const home = join(scratch, "home");
  const own = join(scratch, "own-runtime");
  const shared = join(scratch, "shared-runtime");
  mkdirSync(home, { mode: 0o700 });
  mkdirSync(own, { mode: 0o700 });
  mkdirSync(shared);
  await chmod(shared, 0o1777);
  const proxy = (runtime: string, ready: RegExp) =>
    spawnUntil(
      [
        process.execPath,
        CLI_ENTRY,
        "proxy",
        "locked",
        "--target-uri",
        remote.url,
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
      ],
      ready,
      { env: { MCPMGR_HOME: home, XDG_RUNTIME_DIR: runtime }, timeoutMs: 30_000 },
    );

  // A first proxy logs in (its locks in the user's own folder); the grant is stored.
  const first = await proxy(own, /^(http:\/\/127\.0\.0\.1:\d+\/auth\?\S+)$/m);
  try {
    expect(await completeLogin(first.match[1] as string)).toBe(200);
    await until(() => clientUrl.exec(first.output())?.[1], "the first proxy's client URL");
  } finally {
    await first.stop();
  }

  // The next one starts with the stored grant, its lock folder in a shared XDG_RUNTIME_DIR.
  const second = await proxy(shared, clientUrl);
  try {
    // Another user makes the folder after the start's check (made by a refresh at the start, it is theirs now).
    const theirs = join(shared, "mcpmgr");
    rmSync(theirs, { recursive: true, force: true });
    mkdirSync(theirs);
    chownSync(theirs, OTHER, OTHER);
    chmodSync(theirs, 0o777);
    // The access token expires (2 s): the next request needs a refresh, under a lock in that folder.
    await Bun.sleep(2_500);
    const refreshes = auth.grants.get("refresh_token") ?? 0;
    const answer = await fetch(second.match[1] as string, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      }),
    });
    // The client is told why mcpmgr has no credentials for the remote.
    const body = await answer.text();
    expect(answer.status).toBe(502);
    expect(body).toContain(`mcpmgr's folder ${theirs} is in another user's reach`);
    // Nothing was refreshed under a lock the other user could hold or break.
    expect(auth.grants.get("refresh_token") ?? 0).toBe(refreshes);
  } finally {
    await second.stop();
  }
});
