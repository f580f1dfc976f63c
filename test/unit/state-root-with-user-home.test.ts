/**
 * Root run with a user's HOME (`sudo -E mcpmgr client register cursor`, documented for configuring
 * that user's AI clients) wrote mcpmgr's state into that home as root's: ~/.local made 0700 root's,
 * client-registrations.json 0600 root's, so the user's own mcpmgr failed at every command with
 * EACCES (and other programs could no longer use ~/.local). Whatever root makes there now belongs
 * to the owner of the folder it is made in, and a file it rewrites keeps its owner. The real CLI
 * as root (the tests run as root, as CI does), then as the user (setpriv).
 */
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import { chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

setDefaultTimeout(60_000);

const MAIN = resolve(import.meta.dir, "../../src/main.ts");
const USER = 65534;

let home: string;
let cache: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-root-user-home-"));
  cache = mkdtempSync(join(tmpdir(), "mcpmgr-root-user-cache-"));
  mkdirSync(join(home, ".cursor"));
  writeFileSync(join(home, ".cursor", "mcp.json"), '{"mcpServers": {}}\n');
  for (const path of [home, join(home, ".cursor"), join(home, ".cursor", "mcp.json")]) chownSync(path, USER, USER);
});
afterEach(() => {
  rmSync(home, { recursive: true, force: true });
  rmSync(cache, { recursive: true, force: true });
});

function mcpmgr(asUser: boolean, ...args: string[]) {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "", HOME: home, BUN_INSTALL_CACHE_DIR: cache };
  const user = asUser ? ["setpriv", `--reuid=${USER}`, `--regid=${USER}`, "--clear-groups"] : [];
  return Bun.spawnSync([...user, process.execPath, MAIN, ...args], { env, cwd: tmpdir() });
}

/** Every path under the home with its owner, but Bun's own cache (not mcpmgr's). */
function owners(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((path) => !path.startsWith(".bun"))
    .map((path) => `${path} ${statSync(join(dir, path)).uid}`)
    .sort();
}

test("root with a user's HOME leaves mcpmgr's state there the user's, who can go on using it", () => {
  const asRoot = mcpmgr(false, "client", "register", "cursor");
  expect(asRoot.stderr.toString()).toContain("[success] Cursor follows group default");
  expect(asRoot.exitCode).toBe(0);
  const listed = owners(home);
  expect(listed).toContain(`.local/state/mcpmgr/client-registrations.json ${USER}`);
  expect(listed.filter((line) => !line.endsWith(` ${USER}`))).toEqual([]);
  const status = mcpmgr(true, "client", "status");
  expect(status.stderr.toString()).toBe("");
  expect(status.exitCode).toBe(0);
  expect(status.stdout.toString()).toMatch(/^cursor +yes +default /m);
});

test("root adding an entry to a user's client file leaves its backup and mcpmgr's state the user's", () => {
  const sync = resolve(import.meta.dir, "../fixtures/clients-writer/register-cursor.ts");
  const run = Bun.spawnSync([process.execPath, sync, home, "add"], { env: { ...process.env, HOME: home } });
  expect(run.stderr.toString()).toBe("");
  expect(JSON.parse(run.stdout.toString())).toEqual({ actions: ["added"], warnings: [] });
  const listed = owners(home);
  expect(listed).toContain(`.mcpmgr/data/client-backups/cursor/mcp.json ${USER}`);
  expect(listed).toContain(`.cursor/mcp.json ${USER}`);
  expect(listed.filter((line) => !line.endsWith(` ${USER}`))).toEqual([]);
});
