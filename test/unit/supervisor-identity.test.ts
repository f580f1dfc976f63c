/**
 * Who counts as a workload's supervisor (state/supervisor-identity.ts `isSupervisorOf`): a
 * live process of this user whose command line is `__supervise NAME`. Another local user can
 * start a process with that command line and wait for a dead supervisor's pid to come round;
 * `stop`, `list`, `proxy stdio NAME` and a group's gateway must not take it for the supervisor (review L1). Runs
 * as root, as the suite does, to start a process as another uid.
 */
import { afterEach, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { isSupervisorOf } from "../../src/state/supervisor-identity.ts";
import { idleProcess } from "../support/processes.ts";

const started: Subprocess[] = [];
afterEach(() => {
  for (const proc of started.splice(0)) proc.kill("SIGKILL");
});

/** A process whose command line reads `bun -e … __supervise victim`, as `uid`. */
async function lookalike(uid: number): Promise<number> {
  const proc = await idleProcess(["__supervise", "victim"], uid);
  started.push(proc);
  return proc.pid;
}

test("a process of this user running '__supervise NAME' is that workload's supervisor, and no other's", async () => {
  const pid = await lookalike(process.getuid?.() ?? 0);
  expect(isSupervisorOf(pid, "victim")).toBe(true);
  expect(isSupervisorOf(pid, "other")).toBe(false);
});

test("the same command line under another uid is not", async () => {
  expect(process.getuid?.()).toBe(0);
  expect(isSupervisorOf(await lookalike(61234), "victim")).toBe(false);
});
