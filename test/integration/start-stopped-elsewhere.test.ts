/**
 * A `stop` (or `rm`) in another terminal of a workload whose `run` or `start` is under way: the waiting
 * command says so as soon as the stop is recorded. The supervisor records its own "stopped" as it
 * obeys the SIGTERM, and a `restart`'s marked one may follow it (start-claim.ts `afterStopped`), so an
 * unmarked "stopped" is watched for 2 s; a plain stop's own "stopped" names it (`stoppedBy`), and ends
 * that watch. A restart's stop is still told apart: the waiting command reports that restart's start.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolvePaths } from "../../src/state/paths.ts";
import { isProcessAlive, processStartTime } from "../../src/state/process-start.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { cliEnv, runCli } from "../support/cli-home.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

let root: string;
let env: Record<string, string>;
let store: WorkloadStore;

const spawnCli = (args: readonly string[]) =>
  Bun.spawn([process.execPath, CLI_ENTRY, ...args], { cwd: REPO_ROOT, env, stdout: "pipe", stderr: "pipe" });

/**
 * The pid of a live supervisor the status names once its server's start is under way (the line that
 * opens a run in the server's log): its signal handlers are set, so a stop makes it record its own
 * "stopped" first, as usual.
 */
async function liveSupervisor(name: string): Promise<number> {
  const opened = () => existsSync(store.logPath(name)) && readFileSync(store.logPath(name), "utf8").includes("----");
  for (const deadline = performance.now() + 20_000; performance.now() < deadline; await Bun.sleep(20)) {
    const pid = (await store.readStatus(name).catch(() => undefined))?.pid;
    if (pid !== undefined && isProcessAlive(pid) && opened()) return pid;
  }
  throw new Error(`no supervisor of ${name} came up`);
}

/**
 * A command waiting for a start of `name` (a server that never answers: the start stays under way),
 * then `other` run from another terminal: the waiting command's stderr and exit code, and how long after
 * the other command ended it ended.
 */
async function overtaken(waiting: readonly string[], name: string, other: readonly string[]) {
  const command = spawnCli(waiting);
  let endedAt = Number.NaN;
  const ended = command.exited.then((code) => {
    endedAt = performance.now();
    return code;
  });
  await liveSupervisor(name);
  const stop = spawnCli(other);
  const [stopCode, stopErr] = [await stop.exited, await new Response(stop.stderr).text()];
  expect({ stopCode, stopErr }).toEqual({ stopCode: 0, stopErr: expect.any(String) });
  const stoppedAt = performance.now();
  const code = await ended;
  return { code, stderr: await new Response(command.stderr).text(), late: endedAt - stoppedAt };
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "mcpmgr-stopped-elsewhere-"));
  env = cliEnv(root);
  store = new WorkloadStore(resolvePaths({ MCPMGR_HOME: env.MCPMGR_HOME }));
});

afterAll(async () => {
  for (const name of ["plain", "gone", "again", "grouped", "waited"]) runCli(env, ["rm", name]);
  await rm(root, { recursive: true, force: true });
});

test("a plain stop during a run's and then a start's start is reported there at once, not seconds later", async () => {
  const run = await overtaken(["run", "npx://./test/fixtures/never-answers", "--name", "plain"], "plain", [
    "stop",
    "plain",
  ]);
  expect(run.code).toBe(1);
  expect(run.stderr).toContain("plain was stopped while it was starting");
  const start = await overtaken(["start", "plain"], "plain", ["stop", "plain"]);
  expect(start.code).toBe(1);
  expect(start.stderr).toContain("plain was stopped while it was starting");
  // Without the stop's own mark, each waited 2 s after the first "stopped" it read (its supervisor's).
  expect({ run: run.late < 1_000, start: start.late < 1_000 }).toEqual({ run: true, start: true });
  expect((await store.readStatus("plain"))?.state).toBe("stopped");
});

test("an rm during a start is reported as the removal, not as a stop", async () => {
  const run = await overtaken(["run", "npx://./test/fixtures/never-answers", "--name", "gone"], "gone", ["rm", "gone"]);
  expect(run.code).toBe(1);
  expect(run.stderr).toContain("gone was removed while it was starting");
  expect(await store.get("gone")).toBeUndefined();
});

test("a group rm --with-workloads during a start is reported as the removal, not as a stop", async () => {
  // It stops each workload, then removes its containers and the workload, as `rm` does. A container
  // engine slow to answer (here one that never does: its detection gives up after 2 s) keeps the
  // stop's "stopped" in place for that long before the removal: it must say a removal follows.
  const engine = join(root, "hung-engine.sock");
  const listener = Bun.listen({ unix: engine, socket: { data() {} } });
  try {
    expect(runCli(env, ["group", "create", "doomed"]).code).toBe(0);
    const command = spawnCli(["run", "npx://./test/fixtures/never-answers", "--name", "grouped", "--group", "doomed"]);
    await liveSupervisor("grouped");
    // As if it were a container workload (its supervisor, a process one, is unaffected).
    const file = join(env.MCPMGR_HOME as string, "state", "workloads", "grouped", "workload.json");
    const record = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
    writeFileSync(file, JSON.stringify({ ...record, runtime: "docker", runtimeEndpoint: `unix://${engine}` }));
    const removal = spawnCli(["group", "rm", "doomed", "--with-workloads"]);
    const stderr = await new Response(command.stderr).text();
    expect({ code: await command.exited, removal: await removal.exited }).toEqual({ code: 1, removal: 0 });
    expect(stderr).toContain("grouped was removed while it was starting");
    expect(stderr).not.toContain("stopped while it was starting");
    expect(await store.get("grouped")).toBeUndefined();
  } finally {
    listener.stop(true);
  }
});

test("a restart during a start is still told from a stop: the start waits for the restart's start", async () => {
  const run = spawnCli(["run", "npx://./test/fixtures/never-answers", "--name", "again"]);
  await liveSupervisor("again");
  const restart = spawnCli(["restart", "again"]);
  // The run reports the restart's start as that command's (it then stands aside: exit 1, workload kept).
  const stderr = await new Response(run.stderr).text();
  expect(await run.exited).toBe(1);
  expect(stderr).toContain("again was restarted elsewhere while it was starting");
  expect(stderr).not.toContain("stopped while it was starting");
  // The restart's own start, under way (the server never answers), is ended by a stop.
  const stop = spawnCli(["stop", "again"]);
  expect(await stop.exited).toBe(0);
  expect(await restart.exited).toBe(1);
  expect(await new Response(restart.stderr).text()).toContain("again was stopped while it was starting");
});

test("a start waiting for another's start waits through a restart's stop for that restart's start", async () => {
  const run = spawnCli(["run", "npx://./test/fixtures/never-answers", "--name", "waited"]);
  const first = await liveSupervisor("waited");
  const start = spawnCli(["start", "waited"]);
  const reader = start.stderr.getReader();
  const decoder = new TextDecoder();
  let stderr = "";
  const readOn = async () => {
    const { done, value } = await reader.read();
    if (!done) stderr += decoder.decode(value, { stream: true });
    return !done;
  };
  while (!stderr.includes("; waiting for that start") && (await readOn()));
  // This process plays a `restart` elsewhere: it stops that start's supervisor, records its marked
  // "stopped", removes the workload's containers (a slow engine takes seconds), then starts it.
  process.kill(first, "SIGTERM");
  while (isProcessAlive(first)) await Bun.sleep(20);
  const restart = { pid: process.pid, startTime: processStartTime(process.pid) ?? "" };
  await store.writeStatus("waited", { state: "stopped", restarts: 0, restartedBy: restart });
  // The gap before the restart's "starting" (a slow engine's container removal takes seconds) outlasts
  // the 2 s an unmarked "stopped" is watched, which the supervisor's own began before it exited: only
  // the mark of a live restart keeps the start waiting past that. Watched, not slept: it must not end.
  for (const until = performance.now() + 3_000; performance.now() < until; await Bun.sleep(50))
    expect(start.exitCode).toBeNull();
  await store.writeStatus("waited", { state: "starting", startedBy: restart });
  expect(start.exitCode).toBeNull();
  // That start's outcome is the waiting command's answer (here it fails).
  await store.writeStatus("waited", { state: "failed", lastError: "the restart's start failed" });
  expect(await start.exited).toBe(1);
  while (await readOn());
  expect(stderr).toContain(
    "waited did not start: another mcpmgr command's start of it failed: the restart's start failed",
  );
  expect(stderr).not.toContain("ended with it stopped");
  await run.exited;
});
