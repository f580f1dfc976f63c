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
async function liveSupervisor(name = "slow"): Promise<number> {
  for (const deadline = performance.now() + 20_000; performance.now() < deadline; await Bun.sleep(20)) {
    const pid = (await store.readStatus(name).catch(() => undefined))?.pid;
    if (pid !== undefined && isProcessAlive(pid)) return pid;
  }
  throw new Error("no supervisor came up");
}

/** All of `stream`, calling `then` once `text` has come (or the stream ended without it). */
async function readUntil(stream: ReadableStream<Uint8Array>, text: string, then: () => Promise<void>): Promise<string> {
  const decoder = new TextDecoder();
  let seen = "";
  let called = false;
  for await (const chunk of stream) {
    seen += decoder.decode(chunk, { stream: true });
    if (!called && seen.includes(text)) {
      called = true;
      await then();
    }
  }
  return seen;
}

/**
 * A `restart` (a command that lives: this test's process) marks its "stopped" as a restart's, and
 * writes its own "starting" only once it has removed the workload's containers, which a slow engine may
 * take seconds for: ours waits for it as long as the restart lives. Ours then waits for that start
 * (lifecycle.ts), saying so; here that start gives up, so ours ends saying whose start it was. All of
 * ours's stderr.
 */
async function restartTakesOver(stderr: ReadableStream<Uint8Array>): Promise<string> {
  const restart = { pid: process.pid, startTime: processStartTime(process.pid) ?? "" };
  await store.writeStatus("slow", { state: "stopped", restarts: 0, restartedBy: restart });
  await Bun.sleep(1_000);
  await store.writeStatus("slow", { state: "starting", startedBy: restart });
  return readUntil(stderr, "waiting for that start", async () => {
    await store.writeStatus("slow", { state: "stopped", restarts: 0 });
  });
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "mcpmgr-killed-by-other-"));
  env = cliEnv(root);
  store = new WorkloadStore(resolvePaths({ MCPMGR_HOME: env.MCPMGR_HOME }));
});

afterAll(async () => {
  runCli(env, ["rm", "slow"]);
  runCli(env, ["rm", "later"]);
  runCli(env, ["rm", "again"]);
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
  const stderr = await restartTakesOver(start.stderr);
  expect(await start.exited).not.toBe(0);
  expect(stderr).toContain("slow was restarted elsewhere while it was starting");
  expect(stderr).not.toContain("stopped while it was starting");
  expect(stderr).not.toContain("failed to start");
});

test("a restart that ends after its 'stopped' without starting leaves ours reporting the stop, without waiting its minute", async () => {
  const start = spawnCli(["start", "slow"]);
  const pid = await liveSupervisor();
  process.kill(pid, "SIGKILL");
  // A real command standing for the restart: it marks its "stopped", then dies before its "starting".
  const restart = Bun.spawn(["sleep", "30"]);
  const restartedBy = { pid: restart.pid, startTime: processStartTime(restart.pid) ?? "" };
  await Bun.sleep(500);
  await store.writeStatus("slow", { state: "stopped", restarts: 0, restartedBy });
  await Bun.sleep(500);
  const killedAt = performance.now();
  restart.kill("SIGKILL");
  await restart.exited;
  const stderr = await new Response(start.stderr).text();
  expect(await start.exited).not.toBe(0);
  expect(performance.now() - killedAt).toBeLessThan(10_000);
  expect(stderr).toContain("slow was stopped while it was starting");
  expect(stderr).not.toContain("failed to start");
});

// A restart that stops our supervisor the usual way (its handlers set): the supervisor records its own,
// unmarked "stopped" as it obeys the SIGTERM, and the restart its marked one once the process is gone.
test("a restart's stop recorded first by our supervisor, unmarked: ours still reports the restart's start", async () => {
  const start = spawnCli(["start", "slow"]);
  await liveSupervisor();
  // The supervisor's own "stopped" (it then ends itself: its start is no longer there)...
  await store.writeStatus("slow", { state: "stopped", restarts: 0 });
  await Bun.sleep(300);
  // ...then the restart's, marked, and its start after it has removed the workload's containers.
  const stderr = await restartTakesOver(start.stderr);
  expect(await start.exited).not.toBe(0);
  expect(stderr).toContain("slow was restarted elsewhere while it was starting");
  expect(stderr).not.toContain("stopped while it was starting");
});

// Ctrl-C while ours waits for a restart's start (its "stopped" marked, its command alive, for up to a
// minute): the wait ends at once, and the workload, the restart's now, is kept for it.
test("Ctrl-C while a run waits on a restart's marked 'stopped' ends it at once and leaves the workload to the restart", async () => {
  const run = spawnCli(["run", "npx://./test/fixtures/never-answers", "--name", "later"]);
  await liveSupervisor("later");
  // A real command standing for the restart, alive well past the test's bound below.
  const restart = Bun.spawn(["sleep", "40"]);
  try {
    const restartedBy = { pid: restart.pid, startTime: processStartTime(restart.pid) ?? "" };
    await store.writeStatus("later", { state: "stopped", restarts: 0, restartedBy });
    // Read by the run within its next poll (every 100 ms): it is then in the restart's wait.
    await Bun.sleep(1_500);
    const interruptedAt = performance.now();
    run.kill("SIGINT");
    const stderr = await new Response(run.stderr).text();
    expect(await run.exited).toBe(130);
    expect(performance.now() - interruptedAt).toBeLessThan(10_000);
    expect(stderr).toContain("later is being restarted by another mcpmgr command; stopped waiting (SIGINT)");
    expect(stderr).not.toContain("was not kept");
    expect(await store.get("later")).toBeDefined();
  } finally {
    restart.kill("SIGKILL");
  }
});

// Ctrl-C while ours watches an unmarked "stopped" (2 s) for a restart's marked one: the stop is another
// command's, so the first start ends at once without removing the workload from under a restart to come.
test("Ctrl-C while a run watches an unmarked 'stopped' ends it at once and keeps the workload stopped", async () => {
  const run = spawnCli(["run", "npx://./test/fixtures/never-answers", "--name", "again"]);
  await liveSupervisor("again");
  await store.writeStatus("again", { state: "stopped", restarts: 0 });
  // Read within the run's next poll (every 100 ms); the 2 s watch it starts has well over 1 s left.
  await Bun.sleep(400);
  run.kill("SIGINT");
  const stderr = await new Response(run.stderr).text();
  expect(await run.exited).toBe(130);
  expect(stderr).toContain("again was stopped by another mcpmgr command; stopped waiting (SIGINT)");
  expect(stderr).not.toContain("was not kept");
  expect(await store.get("again")).toBeDefined();
});
