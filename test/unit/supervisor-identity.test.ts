/**
 * Who counts as a workload's supervisor (state/supervisor-identity.ts `isSupervisorOf`): a
 * live process of this user whose command line is `__supervise NAME`. Another local user can
 * start a process with that command line and wait for a dead supervisor's pid to come round;
 * `stop`, `list`, `proxy stdio NAME` and a group's gateway must not take it for the supervisor (review L1). Runs
 * as root, as the suite does, to start a process as another uid.
 */
import { afterEach, expect, test } from "bun:test";
import { readFileSync, statSync } from "node:fs";
import type { Subprocess } from "bun";
import { isSupervisorOf } from "../../src/state/supervisor-identity.ts";

const started: Subprocess[] = [];
afterEach(() => {
  for (const proc of started.splice(0)) proc.kill("SIGKILL");
});

/** A process whose command line reads `bun -e … __supervise victim`, as `uid`, started (through setpriv for another uid). */
async function lookalike(uid: number): Promise<number> {
  const asUid =
    uid === process.getuid?.() ? [] : ["setpriv", "--reuid", `${uid}`, "--regid", `${uid}`, "--clear-groups"];
  const proc = Bun.spawn([...asUid, process.execPath, "-e", "setTimeout(() => {}, 60_000)", "__supervise", "victim"], {
    stdio: ["ignore", "ignore", "ignore"],
  });
  started.push(proc);
  // Until the pid is that command, as that uid (setpriv changes its uid, then execs in place).
  const ready = () => {
    try {
      return (
        statSync(`/proc/${proc.pid}`).uid === uid &&
        readFileSync(`/proc/${proc.pid}/cmdline`, "utf8").startsWith(`${process.execPath}\0-e\0`)
      );
    } catch {
      return false;
    }
  };
  const deadline = performance.now() + 5_000;
  while (!ready()) {
    if (performance.now() > deadline) throw new Error("the process did not start");
    await Bun.sleep(10);
  }
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
