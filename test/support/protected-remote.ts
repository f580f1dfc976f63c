/**
 * The "remote" the outgoing-auth tests authenticate to: `mcpmgr proxy --oidc-*` in front of
 * the conformance fixture, accepting tokens for JWT_RESOURCE from a real oidc-provider and
 * saying so in its RFC 9728 metadata; plus a scratch dir holding the confidential client's
 * secret file, the options that log in with it, and a gate that plays a misbehaving remote.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLIENTS, JWT_RESOURCE, startAuthServer, type AuthServer } from "./auth-server.ts";
import { startConformanceServer, type RunningFixture } from "./conformance.ts";
import { startProxy } from "./processes.ts";

export const LOCAL_DEV = ["--oidc-insecure-allow-http", "--jwks-allow-private-ip"];

export interface ProtectedRemote {
  readonly auth: AuthServer;
  readonly fixture: RunningFixture;
  readonly remote: Awaited<ReturnType<typeof startProxy>>;
  readonly scratch: string;
  readonly secretFile: string;
  stop(): Promise<void>;
}

export async function startProtectedRemote(scratchPrefix: string): Promise<ProtectedRemote> {
  const auth = await startAuthServer();
  const fixture = await startConformanceServer();
  const remote = await startProxy(fixture.url, [
    "--oidc-issuer",
    auth.issuer,
    "--oidc-audience",
    JWT_RESOURCE,
    "--resource-url",
    JWT_RESOURCE,
    ...LOCAL_DEV,
  ]);
  const scratch = await mkdtemp(join(tmpdir(), scratchPrefix));
  const secretFile = join(scratch, "client-secret");
  await writeFile(secretFile, CLIENTS.mcpmgr.client_secret);
  return {
    auth,
    fixture,
    remote,
    scratch,
    secretFile,
    async stop() {
      await remote.stop();
      await fixture.stop();
      await auth.stop();
      await rm(scratch, { recursive: true, force: true });
    },
  };
}

/**
 * The options that make mcpmgr log in to `setup`'s remote as the confidential client (its secret
 * in the secret file), for JWT_RESOURCE, with its login callback on `callbackPort`.
 */
export function confidentialLogin(setup: Pick<ProtectedRemote, "auth" | "secretFile">, callbackPort: number): string[] {
  return [
    "--remote-auth",
    "--remote-auth-issuer",
    setup.auth.issuer,
    "--remote-auth-client-id",
    CLIENTS.mcpmgr.client_id,
    "--remote-auth-client-secret-file",
    setup.secretFile,
    "--remote-auth-resource",
    JWT_RESOURCE,
    "--remote-auth-callback-port",
    String(callbackPort),
  ];
}

/**
 * The options that make mcpmgr log in to `setup`'s remote as the public client, for JWT_RESOURCE
 * and `mcp:read`, its login pages left to the test (browser skipped, unless `browser`: then the
 * xdg-open on the test's PATH), waiting `timeout` for the user.
 */
export function publicLogin(
  setup: Pick<ProtectedRemote, "auth">,
  callbackPort: number,
  timeout: string,
  { browser = false } = {},
): string[] {
  return [
    "--remote-auth",
    "--remote-auth-issuer",
    setup.auth.issuer,
    "--remote-auth-client-id",
    CLIENTS.mcpmgrPublic.client_id,
    "--remote-auth-resource",
    JWT_RESOURCE,
    "--remote-auth-scopes",
    "mcp:read",
    "--remote-auth-callback-port",
    String(callbackPort),
    ...(browser ? [] : ["--remote-auth-skip-browser"]),
    "--remote-auth-timeout",
    timeout,
  ];
}

/**
 * A relay between mcpmgr and the remote at `target` that plays a misbehaving remote: `answer`
 * sees each request (and its body, read once) and may answer it itself (a 401, a 403); every
 * other request goes on to `target` with its path and query, its answer back unchanged.
 */
export function startGate(
  target: string,
  answer: (req: Request, body: ArrayBuffer | undefined) => Response | undefined,
): ReturnType<typeof Bun.serve> {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
      const own = answer(req, body);
      if (own) return own;
      const url = new URL(req.url);
      const headers = new Headers(req.headers);
      headers.delete("host");
      return fetch(new URL(url.pathname + url.search, target), {
        method: req.method,
        headers,
        ...(body ? { body } : {}),
        signal: req.signal,
      });
    },
  });
}

/** Polls `read` until it gives a value (e.g. a line a process printed). */
export async function until<T>(read: () => T | undefined, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}
