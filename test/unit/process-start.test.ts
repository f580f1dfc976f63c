/**
 * A recorded process (the command starting a workload, a foreground run, a gateway) counts only
 * while it lives: a zombie (ended, not yet collected by its parent) has ended.
 */
import { afterEach, expect, test } from "bun:test";
import { isProcessAlive, isSameProcess, processStartTime } from "../../src/state/process-start.ts";
import { reconcileStatus } from "../../src/state/workload-record.ts";
import { zombie as newZombie } from "../support/processes.ts";

const parents: Bun.Subprocess[] = [];
afterEach(() => {
  for (const parent of parents.splice(0)) parent.kill("SIGKILL");
});

async function zombie(): Promise<number> {
  const { pid, parent } = await newZombie();
  parents.push(parent);
  return pid;
}

test("a zombie is not the live process it was, though its pid and start time are still there", async () => {
  const pid = await zombie();
  const startTime = processStartTime(pid);
  expect(startTime).toMatch(/^\d+$/);
  expect(isSameProcess(pid, startTime as string)).toBe(false);
  // A live process still is.
  expect(isSameProcess(process.pid, processStartTime(process.pid) as string)).toBe(true);
});

test("a zombie is not alive, for every liveness check (locks, supervisors, client entries)", async () => {
  const pid = await zombie();
  expect(isProcessAlive(pid)).toBe(false);
  expect(isProcessAlive(process.pid)).toBe(true);
  // Its parent, which never collects it, lives.
  expect(isProcessAlive(parents[0]?.pid as number)).toBe(true);
});

test("a start whose command ended as a zombie reads as failed, so another start is not refused for good", async () => {
  const pid = await zombie();
  const status = reconcileStatus(
    {
      schema_version: 1,
      state: "starting",
      startedBy: { pid, startTime: processStartTime(pid) as string },
      restarts: 0,
      updatedAt: new Date().toISOString(),
    },
    () => false,
  );
  expect(status.state).toBe("failed");
});
