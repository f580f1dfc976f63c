/**
 * What a stop's "stopped" must not be written over (start-claim.ts `stopOvertaken`): another command's
 * start begun since its supervisor exited, a restart's marked "stopped" (its start follows), an rm's
 * (its removal follows); and what it may: its own supervisor's report, what that supervisor left, a
 * start whose command is gone. Real processes stand for the other commands.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolvePaths } from "../../src/state/paths.ts";
import { processStartTime } from "../../src/state/process-start.ts";
import type { WorkloadStatus } from "../../src/state/workload-record.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { stopOvertaken } from "../../src/workload/start-claim.ts";

let root: string;
let store: WorkloadStore;
const other = Bun.spawn(["sleep", "60"]);
const otherCommand = { pid: other.pid, startTime: processStartTime(other.pid) ?? "" };

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "mcpmgr-stop-overtaken-"));
  store = new WorkloadStore(resolvePaths({ MCPMGR_HOME: root }));
});

afterAll(async () => {
  other.kill();
  await rm(root, { recursive: true, force: true });
});

const at = (status: Omit<WorkloadStatus, "updatedAt" | "schema_version">) =>
  stopOvertaken({ schema_version: 1, updatedAt: new Date().toISOString(), ...status }, "w", store, 4242);

test("another command's start, or a restart's or rm's marked stop, is not written over", () => {
  expect(at({ state: "starting", restarts: 0, startedBy: otherCommand })).toEqual({
    start: `another mcpmgr command (pid ${other.pid}) is starting it`,
  });
  expect(at({ state: "stopped", restarts: 0, restartedBy: otherCommand })).toEqual({
    start: `another mcpmgr command (pid ${other.pid}) is restarting it`,
  });
  expect(at({ state: "stopped", restarts: 0, stoppedBy: { ...otherCommand, removing: true } })).toBe("rm");
});

test("the stopped supervisor's own report, what it left, and a start whose command is gone are", async () => {
  // Its own supervisor's report, by pid (here a pid no supervisor of it holds).
  expect(
    stopOvertaken(
      { schema_version: 1, state: "running", pid: process.pid, restarts: 0, updatedAt: "" },
      "w",
      store,
      process.pid,
    ),
  ).toBeUndefined();
  expect(at({ state: "stopped", restarts: 0 })).toBeUndefined();
  expect(at({ state: "failed", restarts: 0, lastError: "x" })).toBeUndefined();
  expect(at({ state: "stopped", restarts: 0, stoppedBy: otherCommand })).toBeUndefined();
  const gone = Bun.spawn(["true"]);
  const goneCommand = { pid: gone.pid, startTime: processStartTime(gone.pid) ?? "x" };
  await gone.exited;
  expect(at({ state: "starting", restarts: 0, startedBy: goneCommand })).toBeUndefined();
  expect(at({ state: "stopped", restarts: 0, restartedBy: goneCommand })).toBeUndefined();
});
