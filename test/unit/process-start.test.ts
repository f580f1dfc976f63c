/**
 * A recorded process (the command starting a workload, a foreground run, a gateway) counts only
 * while it lives: a zombie (ended, not yet collected by its parent) has ended.
 */
import { afterEach, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { isSameProcess, processStartTime } from "../../src/state/process-start.ts";
import { reconcileStatus } from "../../src/state/workload-record.ts";

const parents: Bun.Subprocess[] = [];
afterEach(() => {
  for (const parent of parents.splice(0)) parent.kill("SIGKILL");
});

const stateOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
};

/** A child that has exited and that its parent (a `sleep`, which never waits) leaves uncollected. */
async function zombie(): Promise<number> {
  const parent = Bun.spawn(["sh", "-c", "sleep 0 & echo $!; exec sleep 30"], { stdout: "pipe" });
  parents.push(parent);
  const reader = parent.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
  reader.releaseLock();
  const pid = Number(text.trim());
  const deadline = Date.now() + 10_000;
  while (stateOf(pid) !== "Z" && Date.now() < deadline) await Bun.sleep(10);
  expect(stateOf(pid)).toBe("Z");
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
