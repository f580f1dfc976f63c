/**
 * The backup of a client's file is written beside its place in the data folder and then linked to
 * its name; mcpmgr killed between the two left that temporary file, a whole copy of the client's
 * file (tokens included), for good: nothing looked at it again. strace kills the writer at the
 * backup's link (the one system call that names the backup's path), so the test does not depend on
 * timing; the next edit of the file removes what it left.
 */
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

setDefaultTimeout(60_000);

const SYNC = resolve(import.meta.dir, "../fixtures/clients-writer/register-cursor.ts");
const SEED = '{\n  "mcpServers": {\n    "docs": {"command": "npx"}\n  }\n}\n';

let home: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-backup-killed-"));
  mkdirSync(join(home, ".cursor"));
  writeFileSync(join(home, ".cursor", "mcp.json"), SEED);
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

test("a backup's temporary file a killed mcpmgr left is removed at the next edit of the file", () => {
  const env = { ...process.env, HOME: home };
  const folder = join(home, ".mcpmgr", "data", "client-backups", "cursor");
  const killed = Bun.spawnSync(
    ["strace", "-f", "-o", "/dev/null", "-P", join(folder, "mcp.json"), "-e", "trace=link"].concat([
      "-e",
      "inject=link:signal=KILL",
      process.execPath,
      SYNC,
      home,
      "add",
    ]),
    { env },
  );
  expect(killed.signalCode ?? killed.exitCode).not.toBe(0);
  const left = readdirSync(folder);
  expect(left).toHaveLength(1);
  expect(readFileSync(join(folder, left[0] as string), "utf8")).toBe(SEED);

  const run = Bun.spawnSync([process.execPath, SYNC, home, "add"], { env });
  expect(run.stderr.toString()).toBe("");
  expect(JSON.parse(run.stdout.toString()).actions).toEqual(["added"]);
  expect(readdirSync(folder)).toEqual(["mcp.json"]);
  expect(readFileSync(join(folder, "mcp.json"), "utf8")).toBe(SEED);
});
