/**
 * Root with a user's HOME gives what it makes there to the owner of the folder it is made in
 * (state-root-with-user-home.test.ts). That owner must be read from the folder the new file or
 * folder really is in, not from its path: the user owns the folders on the path and can swap one
 * for a link between root's look at the path and root's open of it, and root then gave a folder
 * or file of its own (/usr/share, a file in /etc) to the user, who could change what root runs.
 * strace holds the process at the open of the folder it made, or stops it (SIGSTOP) right after
 * its look at the folder a file goes in; a folder above is swapped for a link to a root-owned
 * one (seen in strace's output, polled), then the process goes on.
 */
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import { chownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { raceUnderStrace, swapForLink } from "../support/strace-race.ts";

setDefaultTimeout(60_000);

const ATOMIC_FILE = resolve(import.meta.dir, "../../src/state/atomic-file.ts");
const USER = 65534;

let root: string;
let home: string;
let rootsOwn: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "mcpmgr-root-owner-race-"));
  home = join(root, "home");
  rootsOwn = join(root, "roots-own");
  mkdirSync(join(home, ".local"), { recursive: true });
  chownSync(home, USER, USER);
  chownSync(join(home, ".local"), USER, USER);
  // Root's own folder, holding what root's write is turned to: a folder `share`, nothing else.
  mkdirSync(join(rootsOwn, "share"), { recursive: true });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/**
 * Runs `script` as root under strace (`options`), swapping a folder for a link once strace has
 * written `seen` (stopped or held there), then to the end; its output.
 */
async function racedRun(script: string, options: string[], seen: string, swap: () => void): Promise<string> {
  const program = join(root, "program.ts");
  writeFileSync(program, script);
  const { stdout, stderr } = await raceUnderStrace({
    trace: join(root, "trace.txt"),
    options,
    command: [process.execPath, program],
    env: { ...process.env, HOME: home },
    seen,
    meanwhile: swap,
  });
  return `${stdout}${stderr}`;
}

/** Paths under `dir` that are the user's. */
function usersIn(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter(
    (path) => lstatSync(join(dir, path)).uid === USER,
  );
}

test("a folder root makes in a user's folder swapped for a link is not given to the user", async () => {
  const local = join(home, ".local");
  const share = join(local, "share");
  // Held at the entry of the open of the folder it made (the folder above it looked at before).
  const output = await racedRun(
    `import { ensureDir } from ${JSON.stringify(ATOMIC_FILE)};\nawait ensureDir(${JSON.stringify(join(share, "mcpmgr"))});\n`,
    ["-P", share, "-e", "trace=openat,open", "-e", "inject=openat,open:delay_enter=3000000:when=1"],
    `open`,
    swapForLink(local, rootsOwn),
  );
  expect(output).toBe("");
  expect(usersIn(rootsOwn)).toEqual([]);
  expect(statSync(join(rootsOwn, "share")).uid).toBe(0);
});

test("a file root writes in a user's folder swapped for a link is not given to the user", async () => {
  const state = join(home, ".local", "state");
  mkdirSync(state);
  chownSync(state, USER, USER);
  // Stopped right after the first look at the folder (before the temporary file is made, or after).
  await racedRun(
    `import { writeFileAtomic } from ${JSON.stringify(ATOMIC_FILE)};\nawait writeFileAtomic(${JSON.stringify(join(state, "groups.json"))}, "{}");\n`,
    ["-P", state, "-e", "trace=statx,newfstatat,stat", "-e", "inject=statx,newfstatat,stat:signal=STOP:when=1"],
    "stopped by SIGSTOP",
    swapForLink(state, join(rootsOwn, "share")),
  );
  expect(usersIn(rootsOwn)).toEqual([]);
});

test("without a race, what root makes in the user's folders is still the user's", () => {
  const local = join(home, ".local");
  const stderr = runAsRoot(
    `import { ensureDir, writeFileAtomic } from ${JSON.stringify(ATOMIC_FILE)};\nawait ensureDir(${JSON.stringify(join(local, "share", "mcpmgr"))});\nawait writeFileAtomic(${JSON.stringify(join(local, "share", "mcpmgr", "groups.json"))}, "{}");\n`,
    { HOME: home },
  );
  expect(stderr).toBe("");
  for (const path of ["share", "share/mcpmgr", "share/mcpmgr/groups.json"]) {
    expect(statSync(join(local, path)).uid).toBe(USER);
  }
});

/** Runs `script` as root with `env`; its stderr. */
function runAsRoot(script: string, env: Record<string, string>): string {
  const program = join(root, "program.ts");
  writeFileSync(program, script);
  const run = Bun.spawnSync([process.execPath, program], { env: { PATH: process.env.PATH ?? "", ...env } });
  return run.stderr.toString();
}

/**
 * `su` (not `su -`) gives root its own HOME but keeps the user's XDG_RUNTIME_DIR (/run/user/1000),
 * where root's mcpmgr keeps its runtime folder (pid files, sockets of root's workloads): given to
 * the owner of the folder they were made in, they became the user's to rewrite.
 */
test("root with its own HOME keeps what it makes in a folder of a user's (the user's XDG_RUNTIME_DIR) root's", () => {
  const rootsHome = join(root, "roots-home");
  mkdirSync(rootsHome);
  const runtime = join(root, "run-user");
  mkdirSync(runtime);
  chownSync(runtime, USER, USER);
  const stderr = runAsRoot(
    `import { ensureDir, writeFileAtomic } from ${JSON.stringify(ATOMIC_FILE)};\nawait ensureDir(${JSON.stringify(join(runtime, "mcpmgr", "gw"))});\nawait writeFileAtomic(${JSON.stringify(join(runtime, "mcpmgr", "gw", "pid"))}, "1");\n`,
    { HOME: rootsHome },
  );
  expect(stderr).toBe("");
  expect(usersIn(runtime)).toEqual([]);
});

test("root with a user's HOME keeps what it makes in another user's folder root's", () => {
  const other = join(root, "others");
  mkdirSync(other);
  chownSync(other, USER - 1, USER - 1);
  const stderr = runAsRoot(
    `import { ensureDir, writeFileAtomic } from ${JSON.stringify(ATOMIC_FILE)};\nawait ensureDir(${JSON.stringify(join(other, "mcpmgr"))});\nawait writeFileAtomic(${JSON.stringify(join(other, "mcpmgr", "groups.json"))}, "{}");\n`,
    { HOME: home },
  );
  expect(stderr).toBe("");
  expect(statSync(join(other, "mcpmgr")).uid).toBe(0);
  expect(statSync(join(other, "mcpmgr", "groups.json")).uid).toBe(0);
});
