/**
 * Liveness under /proc mounted with hidepid= (a hardening many servers use): another user's live
 * process is hidden (hidepid=2: no /proc entry) or refused (hidepid=1: its files unreadable), yet
 * the kernel says it exists. mcpmgr must not read it as dead: that would break a lock another
 * user's mcpmgr holds on a shared AI-client file. Nor as ours: a pid our own mcpmgr wrote (a lock's
 * holder of our uid, a foreground run's AI-client entry) that /proc hides was taken by another user's
 * process after ours died, and the lock is freed, the entry removed. Its own zombies stay dead. Each case runs in a private pid and mount namespace whose /proc is remounted with
 * the option; the probe runs as uid 65533, the hidden process as 65534 (needs root, as CI is).
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnCollect } from "../support/processes.ts";

setDefaultTimeout(60_000);

const probe = join(import.meta.dir, "../fixtures/hidepid-probe/probe.ts");
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function probeUnder(hidepid: 1 | 2): Promise<Record<string, unknown>> {
  const lockDir = mkdtempSync(join(tmpdir(), "mcpmgr-hidepid-"));
  dirs.push(lockDir);
  chmodSync(lockDir, 0o777);
  const as = (uid: number) => `setpriv --reuid=${uid} --regid=${uid} --clear-groups`;
  // The idle process's pid is known at once; the probe polls nothing, it reads what /proc says.
  const script = [
    "set -e",
    `mount -o remount,hidepid=${hidepid} /proc`,
    `${as(65534)} sleep 60 & hidden=$!`,
    `${as(65533)} env HOME=${lockDir} ${process.execPath} ${probe} "$hidden" ${lockDir}`,
    'kill "$hidden"',
  ].join("\n");
  const run = await spawnCollect(
    ["unshare", "--pid", "--fork", "--mount", "--mount-proc", "sh", "-c", script],
    process.env,
  );
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout.trim().split("\n").at(-1) as string);
}

for (const [hidepid, statRead] of [
  [2, "ENOENT"],
  [1, "EPERM"],
] as const) {
  test(`hidepid=${hidepid}: another user's hidden live process is alive (its lock kept), not the same as a recorded one, nor our own (a lock our dead process held and its foreground run's client entry are freed); an ended pid and an own zombie are dead`, async () => {
    expect(await probeUnder(hidepid)).toEqual({
      statRead,
      hiddenAlive: true,
      hiddenSame: false,
      endedAlive: false,
      zombieAlive: false,
      zombieSame: false,
      ownAlive: true,
      lock: "STATE_LOCKED",
      // Its refusal says whose it is, and not to delete it: `ps` here shows none of that user's processes.
      lockNamesStranger: true,
      lockSaysDelete: false,
      ownLock: "taken",
      staleEntry: "removed",
    });
  });
}
