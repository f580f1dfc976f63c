/**
 * A temporary HOME for AI-client configuration tests: a ClientContext pointing at it (Linux
 * layout, no XDG variables, its own MCPMGR_HOME), with warnings collected, and the seed
 * files of test/fixtures/clients placed where each client keeps its configuration.
 */
import { afterEach, beforeEach } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { clientById } from "../../src/clients/catalog.ts";
import { ClientConfigSync } from "../../src/clients/sync.ts";
import type { ClientContext, ClientId, WorkloadEndpoint } from "../../src/clients/types.ts";
import { resolvePaths } from "../../src/state/paths.ts";

export const FIXTURES = resolve(import.meta.dir, "../fixtures/clients");

export interface ClientHome {
  readonly home: string;
  readonly ctx: ClientContext;
  readonly warnings: string[];
  readonly infos: string[];
  /** Writes the client's seed file where the client keeps it; returns that path. */
  seed(client: ClientId): string;
  read(client: ClientId): string;
  cleanup(): void;
}

export function fixtureFile(kind: "seed" | "expected", client: ClientId): string {
  const name = readdirSync(join(FIXTURES, kind)).find((file) => file.startsWith(`${client}.`));
  if (name === undefined) throw new Error(`no ${kind} fixture for ${client}`);
  return readFileSync(join(FIXTURES, kind, name), "utf8");
}

export function makeClientHome(env: Record<string, string> = {}): ClientHome {
  const home = mkdtempSync(join(tmpdir(), "mcpmgr-client-home-"));
  const warnings: string[] = [];
  const infos: string[] = [];
  const ctx: ClientContext = {
    home,
    platform: "linux",
    env,
    paths: resolvePaths({ MCPMGR_HOME: join(home, ".mcpmgr") }, "linux", home),
    log: { warn: (message) => warnings.push(message), info: (message) => infos.push(message) },
    selfCommand: ["/opt/mcpmgr/bin/mcpmgr"],
  };
  return {
    home,
    ctx,
    warnings,
    infos,
    seed(client) {
      const path = clientById(client).configPath(ctx);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, fixtureFile("seed", client));
      return path;
    },
    read: (client) => readFileSync(clientById(client).configPath(ctx), "utf8"),
    cleanup: () => rmSync(home, { recursive: true, force: true }),
  };
}

/** A workload of group "default" at http://127.0.0.1:`port`/mcp over streamable HTTP, as the clients' sync sees it. */
export function localEndpoint(name: string, port: number, extra: Partial<WorkloadEndpoint> = {}): WorkloadEndpoint {
  return { name, group: "default", url: `http://127.0.0.1:${port}/mcp`, transport: "streamable-http", ...extra };
}

/** Before each test of a file, a fresh client home `h` and a sync over it (handed to `use`); after it, the home goes. */
export function clientSyncPerTest(use: (fresh: { h: ClientHome; sync: ClientConfigSync }) => void): void {
  let home: ClientHome | undefined;
  beforeEach(() => {
    home = makeClientHome();
    use({ h: home, sync: new ClientConfigSync(home.ctx) });
  });
  afterEach(() => home?.cleanup());
}

/**
 * Makes, in a CLI's HOME, the folder that says each client is installed (`client register` refuses a
 * client that is not): the first install marker that is not its configuration file.
 */
export function installClients(home: string, env: Record<string, string>, clients: readonly ClientId[]): void {
  const ctx: ClientContext = {
    home,
    platform: process.platform,
    env,
    paths: resolvePaths(env, process.platform, home),
    log: { warn: () => {}, info: () => {} },
    selfCommand: [],
  };
  for (const id of clients) {
    const client = clientById(id);
    const file = client.configPath(ctx);
    const folder = client.installMarkers(ctx).find((marker) => marker !== file);
    if (folder !== undefined) mkdirSync(folder, { recursive: true });
  }
}
