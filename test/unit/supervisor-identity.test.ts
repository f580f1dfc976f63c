/**
 * Who counts as a workload's supervisor (state/supervisor-identity.ts `isSupervisorOf`): a
 * live process of this user whose command line is `__supervise NAME`. Another local user can
 * start a process with that command line and wait for a dead supervisor's pid to come round;
 * `stop`, `list`, `proxy stdio NAME` and a group's gateway must not take it for the supervisor (review L1). Runs
 * as root, as the suite does, to start a process as another uid. Nor is another home's supervisor of a
 * workload of the same name (its stdout, the proxy log, is in another logs folder): pid reuse between
 * two homes would have one home's `stop` stop the other's workload.
 */
import { afterEach, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isSupervisorOf } from "../../src/state/supervisor-identity.ts";
import { idleProcess } from "../support/processes.ts";

const started: Subprocess[] = [];
const folders: string[] = [];
afterEach(() => {
  for (const proc of started.splice(0)) proc.kill("SIGKILL");
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** A home none of these processes writes to (theirs print to /dev/null or to other folders). */
const HOME = { logDir: "/nonexistent/mcpmgr/logs" };

/** A fresh home's logs folder. */
function logsFolder(): string {
  const root = mkdtempSync(join(tmpdir(), "mcpmgr-identity-"));
  folders.push(root);
  const logDir = join(root, "logs");
  mkdirSync(logDir);
  return logDir;
}

/** A supervisor look-alike of `victim` whose stdout and stderr are `log`, as a real supervisor's proxy log is. */
async function supervisorPrintingTo(log: string): Promise<number> {
  const out = openSync(log, "a", 0o600);
  const proc = Bun.spawn([process.execPath, "-e", "setTimeout(() => {}, 60_000)", "__supervise", "victim"], {
    stdio: ["ignore", out, out],
  });
  closeSync(out);
  started.push(proc);
  const deadline = performance.now() + 5_000;
  while (!readFileSync(`/proc/${proc.pid}/cmdline`, "utf8").includes("__supervise")) {
    if (performance.now() > deadline) throw new Error("the process did not start");
    await Bun.sleep(10);
  }
  return proc.pid;
}

/** A process whose command line reads `bun -e … __supervise victim`, as `uid`. */
async function lookalike(uid: number): Promise<number> {
  const proc = await idleProcess(["__supervise", "victim"], uid);
  started.push(proc);
  return proc.pid;
}

test("a process of this user running '__supervise NAME' is that workload's supervisor, and no other's", async () => {
  const pid = await lookalike(process.getuid?.() ?? 0);
  expect(isSupervisorOf(pid, "victim", HOME)).toBe(true);
  expect(isSupervisorOf(pid, "other", HOME)).toBe(false);
});

test("the same command line under another uid is not", async () => {
  expect(process.getuid?.()).toBe(0);
  expect(isSupervisorOf(await lookalike(61234), "victim", HOME)).toBe(false);
});

test("another home's supervisor of a workload of the same name is not this home's", async () => {
  const ours = logsFolder();
  const theirs = logsFolder();
  const pid = await supervisorPrintingTo(join(theirs, "victim.proxy.log"));
  expect(isSupervisorOf(pid, "victim", { logDir: theirs })).toBe(true);
  expect(isSupervisorOf(pid, "victim", { logDir: ours })).toBe(false);
});

test("this home's supervisor stays its own when the home is reached through a symlink or its proxy log was deleted", async () => {
  const logDir = logsFolder();
  const log = join(logDir, "victim.proxy.log");
  const pid = await supervisorPrintingTo(log);
  const link = join(logDir, "..", "linked-logs");
  symlinkSync(logDir, link);
  expect(isSupervisorOf(pid, "victim", { logDir: link })).toBe(true);
  rmSync(log);
  expect(isSupervisorOf(pid, "victim", { logDir })).toBe(true);
  expect(isSupervisorOf(pid, "victim", { logDir: link })).toBe(true);
});

test("a home reached through a symlinked folder above it keeps its supervisor when its logs folder was deleted by hand", async () => {
  // A home under a symlink (MCPMGR_HOME or HOME itself, say /home -> /data/home): the supervisor's
  // stdout reads as the real path, the home's logs folder as the linked one. With the folder gone the
  // two cannot be compared by inode; the home's real path still says they are one folder.
  const logDir = logsFolder();
  const pid = await supervisorPrintingTo(join(logDir, "victim.proxy.log"));
  const root = join(logDir, "..");
  const link = `${root}-linked`;
  symlinkSync(root, link);
  folders.push(link);
  const linked = { logDir: join(link, "logs") };
  expect(isSupervisorOf(pid, "victim", linked)).toBe(true);
  rmSync(logDir, { recursive: true });
  expect(isSupervisorOf(pid, "victim", linked)).toBe(true);
  expect(isSupervisorOf(pid, "victim", { logDir })).toBe(true);
});

test("a supervisor whose logs folder was renamed within this home's state folder stays this home's", async () => {
  const logDir = logsFolder();
  const pid = await supervisorPrintingTo(join(logDir, "victim.proxy.log"));
  renameSync(logDir, `${logDir}.old`);
  expect(isSupervisorOf(pid, "victim", { logDir })).toBe(true);
  // Another home's folder is never in this home's state folder: still not ours.
  expect(isSupervisorOf(pid, "victim", { logDir: logsFolder() })).toBe(false);
});

test("another home's supervisor stays another home's when its proxy log was deleted", async () => {
  // The kernel names a deleted file `… (deleted)`, which is no NAME.proxy.log as written: without taking
  // that suffix off, such a stdout would read as one that says nothing of its home, and pass for ours.
  const theirs = logsFolder();
  const log = join(theirs, "victim.proxy.log");
  const pid = await supervisorPrintingTo(log);
  rmSync(log);
  expect(isSupervisorOf(pid, "victim", { logDir: logsFolder() })).toBe(false);
});
