/**
 * A client file that belongs to another user than the one running mcpmgr (not root): root's,
 * left by a `sudo`, or a colleague's shared through a group. Its folder being the user's let a
 * rename replace it: a file its mode did not let the user write was rewritten all the same, and
 * one it did became the user's (owner and group gone). Now the first is left alone with one
 * warning, and the second is written in place, keeping its owner. Real files, and mcpmgr's sync
 * in a process of uid 65534 (setpriv; the tests run as root, as CI does).
 */
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";

setDefaultTimeout(60_000);

const SYNC = resolve(import.meta.dir, "../fixtures/clients-writer/register-cursor.ts");
const USER = 65534;
const SEED = '{\n  "mcpServers": {\n    "docs": {"command": "npx"}\n  }\n}\n';

let home: string;
let file: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-other-owner-"));
  mkdirSync(join(home, ".cursor"));
  file = join(home, ".cursor", "mcp.json");
  writeFileSync(file, SEED);
  for (const path of [home, join(home, ".cursor"), file]) chownSync(path, USER, USER);
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

/** mcpmgr's sync run as the user, in group 3000 (the colleague's group). */
function syncCommand(step: "add" | "remove"): string[] {
  return ["setpriv", `--reuid=${USER}`, `--regid=${USER}`, "--groups=3000", process.execPath, SYNC, home, step];
}

function syncAsUser(step: "add" | "remove"): { actions: string[]; warnings: string[] } {
  const run = Bun.spawnSync(syncCommand(step), { env: { ...process.env, HOME: home } });
  expect(run.stderr.toString()).toBe("");
  expect(run.exitCode).toBe(0);
  return JSON.parse(run.stdout.toString());
}

const ownerOf = (path: string) =>
  `${statSync(path).uid}:${statSync(path).gid} ${(statSync(path).mode & 0o777).toString(8)}`;

test("root's file that the user may not write, in the user's own folder, is left alone with one warning", () => {
  chownSync(file, 0, 0);
  chmodSync(file, 0o644);
  const { actions, warnings } = syncAsUser("add");
  expect(actions).toEqual(["skipped"]);
  expect(readFileSync(file, "utf8")).toBe(SEED);
  expect(ownerOf(file)).toBe("0:0 644");
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain(
    "it belongs to root and its mode (0644) does not let you write it; mcpmgr left it unchanged",
  );
});

test("a colleague's file shared through a group keeps its owner and group through an add and a removal", () => {
  chownSync(file, 1234, 3000);
  chmodSync(file, 0o664);
  expect(syncAsUser("add")).toEqual({ actions: ["added"], warnings: [] });
  expect(JSON.parse(readFileSync(file, "utf8")).mcpServers.fetch).toEqual({ url: "http://127.0.0.1:41001/mcp" });
  expect(ownerOf(file)).toBe("1234:3000 664");
  expect(syncAsUser("remove")).toEqual({ actions: ["removed"], warnings: [] });
  expect(readFileSync(file, "utf8")).toBe(SEED);
  expect(ownerOf(file)).toBe("1234:3000 664");
});

test("the user's own file that the user may not read (mode 0200) is left alone with one line saying so", () => {
  chmodSync(file, 0o200);
  const { actions, warnings } = syncAsUser("add");
  expect(actions).toEqual(["skipped"]);
  expect(warnings).toEqual([
    `Cursor (${file}): it cannot be read by you (EACCES); mcpmgr left it unchanged (let yourself read and write it, e.g. chmod u+rw on it)`,
  ]);
  expect(readFileSync(file, "utf8")).toBe(SEED);
});

/** The user's removal, killed by strace at a system call (`call`, its `inject` options after the call's name). */
function removeKilledAt(call: string, inject: string): void {
  const run = Bun.spawnSync(
    [
      "strace",
      "-f",
      "-o",
      "/dev/null",
      "-e",
      `trace=${call}`,
      "-e",
      `inject=${call}:${inject}`,
      ...syncCommand("remove"),
    ],
    { env: { ...process.env, HOME: home } },
  );
  expect(run.signalCode ?? run.exitCode).not.toBe(0);
}

/**
 * An in-place write is not atomic: mcpmgr killed between writing a shorter text and cutting the
 * file to its length left the new text followed by the old one's tail, a file the client cannot
 * read, with nothing but the first change's backup to repair it from. strace kills the writer at
 * exactly that step (its ftruncate), so the test does not depend on timing.
 */
function removeKilledAtTruncate(): void {
  removeKilledAt("ftruncate", "signal=KILL");
}

test("a shared file's in-place write cut short by a kill is put back at the next edit, then edited", () => {
  chownSync(file, 1234, 3000);
  chmodSync(file, 0o664);
  expect(syncAsUser("add").actions).toEqual(["added"]);
  const added = readFileSync(file, "utf8");
  removeKilledAtTruncate();
  const cut = readFileSync(file, "utf8");
  expect(cut.startsWith(SEED)).toBe(true);
  expect(cut).not.toBe(SEED);
  expect(cut.length).toBe(added.length);
  expect(syncAsUser("remove")).toEqual({ actions: ["removed"], warnings: [] });
  expect(readFileSync(file, "utf8")).toBe(SEED);
  expect(ownerOf(file)).toBe("1234:3000 664");
});

test("a cut-short in-place write of a file that changed since is left as it is, the text before it kept", () => {
  chownSync(file, 1234, 3000);
  chmodSync(file, 0o664);
  expect(syncAsUser("add").actions).toEqual(["added"]);
  const added = readFileSync(file, "utf8");
  removeKilledAtTruncate();
  const mine = '{"mcpServers": {"docs": {"command": "npx"}, "notes": {"command": "n"}}}\n';
  writeFileSync(file, mine);
  const { warnings } = syncAsUser("remove");
  const kept = join(home, ".mcpmgr", "data", "client-backups", "cursor", "mcp.json.before-cut-short-write");
  expect(warnings).toEqual([
    `Cursor (${file}): mcpmgr's last change to it was cut short, and it has changed since, so mcpmgr left it as it is; its text before that change is kept in ${kept}`,
  ]);
  expect(readFileSync(kept, "utf8")).toBe(added);
  expect(statSync(kept).mode & 0o777).toBe(0o600);
  expect(readFileSync(file, "utf8")).toBe(mine);
});

/**
 * The journal is written beside the backup through a temporary file (the text read and the new
 * one, tokens included); mcpmgr killed before that file was renamed to the journal left it there
 * for good, as nothing ever looked at it again. strace kills the writer at its first rename
 * (the journal's: the locks are made with links), then the next edit of the file removes it.
 */
test("a journal's temporary file a killed mcpmgr left is removed at the next edit of the file", () => {
  chownSync(file, 1234, 3000);
  chmodSync(file, 0o664);
  expect(syncAsUser("add").actions).toEqual(["added"]);
  const added = readFileSync(file, "utf8");
  removeKilledAt("rename", "signal=KILL:when=1");
  const folder = join(home, ".mcpmgr", "data", "client-backups", "cursor");
  const left = () => readdirSync(folder).filter((name) => name.startsWith("..in-place-"));
  expect(left()).toHaveLength(1);
  expect(readFileSync(file, "utf8")).toBe(added);
  expect(syncAsUser("remove")).toEqual({ actions: ["removed"], warnings: [] });
  expect(left()).toEqual([]);
  expect(readdirSync(folder)).toEqual(["mcp.json"]);
  expect(readFileSync(file, "utf8")).toBe(SEED);
});

/**
 * A journal sits in the user's own data folder, which root's mcpmgr reads too (`sudo -E`): one that
 * inflates far beyond any journal of a file that size (a planted gzip bomb) is dropped without
 * being inflated whole, not read into memory.
 */
test("a journal that would inflate far beyond its file's size is dropped, not read into memory", () => {
  chownSync(file, 1234, 3000);
  chmodSync(file, 0o664);
  expect(syncAsUser("add").actions).toEqual(["added"]);
  const folder = join(home, ".mcpmgr", "data", "client-backups", "cursor");
  const id = createHash("sha256").update(file).digest("hex").slice(0, 16);
  const journal = join(folder, `.in-place-${id}.json.gz`);
  const inflated = 400 * 1024 * 1024;
  const bomb = gzipSync(Buffer.concat([Buffer.from('{"before":"'), Buffer.alloc(inflated, 0x61), Buffer.from('"}')]), {
    level: 9,
  });
  writeFileSync(journal, bomb);
  chownSync(journal, USER, USER);
  const run = Bun.spawnSync(syncCommand("remove"), { env: { ...process.env, HOME: home, REPORT_PEAK: "1" } });
  expect(run.exitCode).toBe(0);
  expect(existsSync(journal)).toBe(false);
  expect(readFileSync(file, "utf8")).toBe(SEED);
  const peakKiB = Number(/peak-kib (\d+)/.exec(run.stderr.toString())?.[1]);
  expect(peakKiB).toBeGreaterThan(0);
  expect(peakKiB * 1024).toBeLessThan(inflated / 2);
});
