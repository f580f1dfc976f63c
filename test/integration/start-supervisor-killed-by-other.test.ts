/**
 * A `restart` racing ours (`restart --all` in two terminals) stops the supervisor our start just
 * spawned, and records "stopped" (then its own "starting") only once that supervisor is gone. A
 * supervisor killed that early (its signal handlers not yet set) reports nothing, so for a moment the
 * status still names our dead supervisor: our start must not call that a failed start
 * (`failed to start: the mcpmgr process N serving this workload is no longer running`) but wait a
 * moment for what the other command records, and report that.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolvePaths } from "../../src/state/paths.ts";
import { isProcessAlive, processStartTime } from "../../src/state/process-start.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { cliEnv, runCli, runCliOk } from "../support/cli-home.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

let root: string;
let env: Record<string, string>;
let store: WorkloadStore;

const spawnCli = (args: readonly string[]) =>
  Bun.spawn([process.execPath, CLI_ENTRY, ...args], { cwd: REPO_ROOT, env, stdout: "pipe", stderr: "pipe" });

/** The pid of the supervisor the status names once there is a live one. */
async function liveSupervisor(): Promise<number> {
  for (const deadline = performance.now() + 20_000; performance.now() < deadline; await Bun.sleep(20)) {
    const pid = (await store.readStatus("slow").catch(() => undefined))?.pid;
    if (pid !== undefined && isProcessAlive(pid)) return pid;
  }
  throw new Error("no supervisor came up");
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "mcpmgr-killed-by-other-"));
  env = cliEnv(root);
  store = new WorkloadStore(resolvePaths({ MCPMGR_HOME: env.MCPMGR_HOME }));
});

afterAll(async () => {
  runCli(env, ["rm", "slow"]);
  await rm(root, { recursive: true, force: true });
});

// The same window met by a `stop` in the first instant of a `run` (seen: its SIGTERM ends a supervisor
// that has not set its handlers yet): `run` took it for a failed first start and did not keep the workload.
test("a stop in the first instant of a run's start: run says it was stopped, and the workload stays recorded", async () => {
  // A server that never answers initialize: its start stays under way for as long as the tests need.
  const run = spawnCli(["run", "npx://./test/fixtures/never-answers", "--name", "slow"]);
  process.kill(await liveSupervisor(), "SIGKILL");
  await Bun.sleep(500);
  await store.writeStatus("slow", { state: "stopped", restarts: 0 });
  const stderr = await new Response(run.stderr).text();
  expect(await run.exited).not.toBe(0);
  expect(stderr).toContain("slow was stopped while it was starting");
  expect(runCliOk(env, ["list"]).stdout).toMatch(/slow\s+stopped/);
});

test("a start whose new supervisor another command kills reports what that command records, not a failure", async () => {
  const start = spawnCli(["start", "slow"]);
  const pid = await liveSupervisor();
  // What the other restart's stop does: the supervisor killed before it could report, "stopped"
  // recorded a little later (after its wait for the process to be gone, and for the store's lock).
  process.kill(pid, "SIGKILL");
  await Bun.sleep(500);
  await store.writeStatus("slow", { state: "stopped", restarts: 0 });
  const stderr = await new Response(start.stderr).text();
  expect(await start.exited).not.toBe(0);
  expect(stderr).toContain("slow was stopped while it was starting");
  expect(stderr).not.toContain("failed to start");
});

test("when that command is a restart, whose 'starting' follows its 'stopped', ours reports the restart's start, not a stop", async () => {
  const start = spawnCli(["start", "slow"]);
  const pid = await liveSupervisor();
  process.kill(pid, "SIGKILL");
  await Bun.sleep(500);
  await store.writeStatus("slow", { state: "stopped", restarts: 0 });
  // The restart's own start, by a command that lives (this test's process), after the seconds its
  // removal of the workload's containers can take on a loaded machine (an engine's round trips)...
  await Bun.sleep(1_500);
  const restart = { pid: process.pid, startTime: processStartTime(process.pid) ?? "" };
  await store.writeStatus("slow", { state: "starting", startedBy: restart });
  // ...which ours waits for (lifecycle.ts): here it gives up, so ours ends saying whose start it was.
  await Bun.sleep(1_000);
  await store.writeStatus("slow", { state: "stopped", restarts: 0 });
  const stderr = await new Response(start.stderr).text();
  expect(await start.exited).not.toBe(0);
  expect(stderr).toContain("slow was restarted elsewhere while it was starting");
  expect(stderr).not.toContain("stopped while it was starting");
  expect(stderr).not.toContain("failed to start");
});

// The same restart met when ours reads its "stopped" before it finds its supervisor gone (a supervisor
// that had set its handlers, stopped the usual way): the restart's start follows that "stopped" after
// its removal of the workload's containers, seconds on a loaded machine, and is still the answer.
test("a restart's 'stopped' read before our supervisor is found gone: ours still reports the restart's start", async () => {
  const start = spawnCli(["start", "slow"]);
  const pid = await liveSupervisor();
  await store.writeStatus("slow", { state: "stopped", restarts: 0 });
  // Read by ours (it polls every 100 ms) while its supervisor may still live (it ends itself on reading
  // "stopped" in place of its start: supervisor.ts); then it is gone.
  await Bun.sleep(400);
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // gone already
  }
  await Bun.sleep(1_100);
  const restart = { pid: process.pid, startTime: processStartTime(process.pid) ?? "" };
  await store.writeStatus("slow", { state: "starting", startedBy: restart });
  await Bun.sleep(1_000);
  await store.writeStatus("slow", { state: "stopped", restarts: 0 });
  const stderr = await new Response(start.stderr).text();
  expect(await start.exited).not.toBe(0);
  expect(stderr).toContain("slow was restarted elsewhere while it was starting");
  expect(stderr).not.toContain("stopped while it was starting");
});
