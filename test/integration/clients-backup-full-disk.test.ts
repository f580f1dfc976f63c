/**
 * The backup of a client's file (its text before mcpmgr's first change) on a full disk: mcpmgr's
 * data folder on a small tmpfs (mounting one needs root, as CI runs) with less room than the file.
 * A copy cut short was kept for good, and every later change took it for done: the user's only
 * backup of their file was a part of it. Now nothing is kept and the client's file is not changed
 * (one warning naming the backup), and once there is room the whole file is kept, then changed.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { linuxClientSync } from "../fixtures/clients-writer/linux-sync.ts";
import { localEndpoint } from "../support/client-home.ts";

setDefaultTimeout(60_000);

let root: string;
let mcpmgrHome: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "mcpmgr-backup-full-"));
  mcpmgrHome = join(root, "mcpmgr");
  mkdirSync(mcpmgrHome);
  const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", mcpmgrHome]);
  if (mounted.exitCode !== 0) throw new Error(`a tmpfs (root only) is needed: ${mounted.stderr.toString()}`);
});
afterAll(async () => {
  Bun.spawnSync(["umount", mcpmgrHome]);
  await rm(root, { recursive: true, force: true });
});

/** Fills the tmpfs but for about `room` bytes. */
function leaveRoom(room: number): void {
  const filler = join(mcpmgrHome, "filler");
  const fd = openSync(filler, "a");
  let written = 0;
  try {
    for (;;) written += writeSync(fd, Buffer.alloc(4096, 120));
  } catch (err) {
    expect((err as NodeJS.ErrnoException).code).toBe("ENOSPC");
  } finally {
    closeSync(fd);
  }
  rmSync(filler);
  writeFileSync(filler, Buffer.alloc(written - room, 120));
}

test("a backup the disk cannot take whole is not kept, the file is left as it is, and the next change keeps it whole", async () => {
  const home = join(root, "home");
  mkdirSync(join(home, ".cursor"), { recursive: true });
  const file = join(home, ".cursor", "mcp.json");
  const seed = `${JSON.stringify({ mcpServers: { docs: { command: "npx" } }, notes: "n".repeat(200_000) }, null, 2)}\n`;
  writeFileSync(file, seed);
  const warnings: string[] = [];
  const sync = linuxClientSync(home, mcpmgrHome, warnings);
  await sync.registerClient("cursor", "default", []);
  const backups = join(mcpmgrHome, "data", "client-backups", "cursor");

  leaveRoom(100_000);
  const [skipped] = await sync.onWorkloadStarted(localEndpoint("fetch", 41001));
  expect(skipped?.action).toBe("skipped");
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain(`cannot save its backup ${join(backups, "mcp.json")}: ENOSPC`);
  expect(readFileSync(file, "utf8")).toBe(seed);
  expect(existsSync(backups) ? readdirSync(backups) : []).toEqual([]);

  rmSync(join(mcpmgrHome, "filler"));
  const [added] = await sync.onWorkloadStarted(localEndpoint("fetch", 41001));
  expect(added?.action).toBe("added");
  expect(readdirSync(backups)).toEqual(["mcp.json"]);
  expect(readFileSync(join(backups, "mcp.json"), "utf8")).toBe(seed);
});
