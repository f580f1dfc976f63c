/**
 * Root with a user's HOME checks an AI client's file's real path before editing it (in the home,
 * the home owner's), but the user owns the folders on that path and can swap one for a link to a
 * folder of root's before the read. Root then edited a file of its own (an entry added to
 * /root/.cursor/mcp.json, say) and saved its text as the backup in the user's data folder, the
 * user's to read (a secret of root's read by the user); or, the file missing there, made one of
 * the user's in root's folder; or, from a journal the user planted in their own data folder,
 * "repaired" root's file with any text the user chose. strace stops mcpmgr (SIGSTOP) once it holds the file's lock,
 * before the read; ~/.cursor is swapped for a link to root's folder, then it goes on.
 */
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import {
  chownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { gzipSync } from "node:zlib";
import { join, resolve } from "node:path";
import { raceUnderStrace, swapForLink } from "../support/strace-race.ts";

setDefaultTimeout(60_000);

const SYNC = resolve(import.meta.dir, "../fixtures/clients-writer/register-cursor.ts");
const USER = 65534;
const ROOTS = '{\n  "mcpServers": {},\n  "rootsSecret": "s3cr3t"\n}\n';

let root: string;
let home: string;
let rootsFolder: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "mcpmgr-root-path-swap-"));
  home = join(root, "home");
  rootsFolder = join(root, "roots-cursor");
  mkdirSync(join(home, ".cursor"), { recursive: true });
  writeFileSync(join(home, ".cursor", "mcp.json"), '{\n  "mcpServers": {}\n}\n');
  for (const path of [home, join(home, ".cursor"), join(home, ".cursor", "mcp.json")]) chownSync(path, USER, USER);
  mkdirSync(rootsFolder);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** Root's sync adding Cursor's entry, ~/.cursor swapped for a link to root's folder once the file's lock is held. */
async function addWithSwap(): Promise<{ actions: string[]; warnings: string[] }> {
  const cursor = join(home, ".cursor");
  const { stdout, stderr } = await raceUnderStrace({
    trace: join(root, "trace.txt"),
    options: ["-P", join(cursor, "mcp.json.mcpmgr-lock"), "-e", "trace=link", "-e", "inject=link:signal=STOP:when=1"],
    command: [process.execPath, SYNC, home, "add"],
    env: { ...process.env, HOME: home },
    seen: "stopped by SIGSTOP",
    meanwhile: swapForLink(cursor, rootsFolder),
  });
  expect(stderr).toBe("");
  return JSON.parse(stdout);
}

/** Every file in the home (not root's, seen through the link) holding root's secret. */
function holdingSecret(): string[] {
  return readdirSync(home, { recursive: true, encoding: "utf8" }).filter((path) => {
    const full = join(home, path);
    if (!realpathSync(full).startsWith(`${home}/`)) return false;
    return statSync(full).isFile() && readFileSync(full, "utf8").includes("s3cr3t");
  });
}

test("a folder swapped for a link to root's before the read: root's file is neither edited nor copied to the user", async () => {
  writeFileSync(join(rootsFolder, "mcp.json"), ROOTS, { mode: 0o600 });
  const { actions, warnings } = await addWithSwap();
  expect(actions).toEqual(["skipped"]);
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain(
    `a folder on its path was replaced by a link while mcpmgr read it (it led to ${join(rootsFolder, "mcp.json")})`,
  );
  expect(readFileSync(join(rootsFolder, "mcp.json"), "utf8")).toBe(ROOTS);
  expect(holdingSecret()).toEqual([]);
});

test("a folder swapped for a link to root's, the file missing there: no file of the user's is made in root's folder", async () => {
  const { actions, warnings } = await addWithSwap();
  expect(actions).toEqual(["skipped"]);
  // Seen at the write, said as at the read (not "cannot update it: cannot write …").
  expect(warnings).toEqual([
    `Cursor (${join(home, ".cursor", "mcp.json")}): a folder on its path was replaced by a link while mcpmgr wrote it (it led to ${join(rootsFolder, "mcp.json")}); mcpmgr runs as root and left it unchanged`,
  ]);
  expect(readdirSync(rootsFolder)).toEqual([]);
});

test("a journal the user planted, a folder swapped for a link to root's: root's file is not repaired from it", async () => {
  // A file of root's anyone may read (so its text is known), and a journal in the user's own data
  // folder saying a write of "it and more" over the user's text was cut short after "it".
  writeFileSync(join(rootsFolder, "mcp.json"), ROOTS, { mode: 0o644 });
  const target = join(home, ".cursor", "mcp.json");
  const folder = join(home, ".mcpmgr", "data", "client-backups", "cursor");
  mkdirSync(folder, { recursive: true });
  const id = createHash("sha256").update(target).digest("hex").slice(0, 16);
  const planted = { target, before: '{"evil": 1}\n', after: `${ROOTS}  ` };
  writeFileSync(join(folder, `.in-place-${id}.json.gz`), gzipSync(JSON.stringify(planted)));
  const { actions } = await addWithSwap();
  expect(actions).toEqual(["skipped"]);
  expect(readFileSync(join(rootsFolder, "mcp.json"), "utf8")).toBe(ROOTS);
});

test("root with a user's HOME still writes a new file in a folder the user linked inside the home (dotfiles)", () => {
  const cursor = join(home, ".cursor");
  const dotfiles = join(home, "dotfiles", "cursor");
  mkdirSync(dotfiles, { recursive: true });
  for (const path of [join(home, "dotfiles"), dotfiles]) chownSync(path, USER, USER);
  rmSync(cursor, { recursive: true });
  symlinkSync(dotfiles, cursor);
  const run = Bun.spawnSync([process.execPath, SYNC, home, "add"], { env: { ...process.env, HOME: home } });
  expect(run.stderr.toString()).toBe("");
  expect(JSON.parse(run.stdout.toString())).toEqual({ actions: ["added"], warnings: [] });
  expect(readFileSync(join(dotfiles, "mcp.json"), "utf8")).toContain('"fetch"');
  expect(statSync(join(dotfiles, "mcp.json")).uid).toBe(USER);
});
