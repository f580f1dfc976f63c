/**
 * The "remote" the outgoing-auth tests authenticate to: `mcpmgr proxy --oidc-*` in front of
 * the conformance fixture, accepting tokens for JWT_RESOURCE from a real oidc-provider and
 * saying so in its RFC 9728 metadata; plus a scratch dir holding the confidential client's
 * secret file.
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
