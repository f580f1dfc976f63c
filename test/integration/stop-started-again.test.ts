/**
 * A `stop` records "stopped" once its supervisor is gone. A `restart` (or `start`) in a third terminal
 * may start the workload in that instant: the supervisor's own "stopped" is already there, so nothing
 * holds that start back. The stop's record must then not land over it: the new supervisor would run
 * on while `list` said stopped, with no pid for a later `stop` to find. strace stops the `stop` at the
 * system call that takes the store's lock for that record (its first link(2)), which it finds taken
 * (EEXIST, as when the restart's "starting" is being written): the restart comes in exactly there,
 * with no timing to hope for, and the stop takes the lock at its next try once it is continued.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolvePaths } from "../../src/state/paths.ts";
import { isProcessAlive } from "../../src/state/process-start.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { cliEnv, runCli, runCliOk } from "../support/cli-home.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
let root: string;
let env: Record<string, string>;
let store: WorkloadStore;
/** Supervisors the tests saw: one left running unseen (the defect) is ended here, not left behind. */
const supervisors: number[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "mcpmgr-stop-started-again-"));
  env = cliEnv(root);
  store = new WorkloadStore(resolvePaths({ MCPMGR_HOME: env.MCPMGR_HOME }));
});

afterAll(async () => {
  for (const name of ["raced", "held"]) runCli(env, ["rm", name]);
  for (const pid of supervisors) if (isProcessAlive(pid)) process.kill(pid, "SIGKILL");
  await rm(root, { recursive: true, force: true });
});

const spawnCli = (args: readonly string[]) =>
  Bun.spawn([process.execPath, CLI_ENTRY, ...args], { cwd: REPO_ROOT, env, stdout: "pipe", stderr: "pipe" });

/** The pid of a live supervisor of `name` other than `not`, once its server's start is under way (its log's opening line). */
async function liveSupervisor(name: string, not?: number): Promise<number> {
  const opened = () => existsSync(store.logPath(name)) && readFileSync(store.logPath(name), "utf8").includes("----");
  for (const deadline = performance.now() + 20_000; performance.now() < deadline; await Bun.sleep(20)) {
    const pid = (await store.readStatus(name).catch(() => undefined))?.pid;
    if (pid !== undefined && pid !== not && isProcessAlive(pid) && opened()) return pid;
  }
  throw new Error(`no supervisor of ${name} came up`);
}

/**
 * `mcpmgr ARGS` under strace, stopped (SIGSTOP) at its first link(2), which fails as on a taken lock.
 * Returned once it is stopped: `end()`, which continues it and its end (strace counts per thread, so
 * a later link(2) on another of its threads stops it again: continued too; each fails as the first did,
 * and the lock is tried again until one thread's second link(2) takes it).
 */
async function stoppedAtFirstLink(args: readonly string[]) {
  const trace = join(root, `strace-${args.join("-")}.log`);
  const command = Bun.spawn(
    [
      "strace",
      "-f",
      "-o",
      trace,
      "-e",
      "trace=link",
      "-e",
      "inject=link:error=EEXIST:signal=STOP:when=1",
      process.execPath,
      CLI_ENTRY,
      ...args,
    ],
    { cwd: REPO_ROOT, env, stdout: "pipe", stderr: "pipe" },
  );
  const stops = () => (existsSync(trace) ? [...readFileSync(trace, "utf8").matchAll(/^(\d+)\s+--- SIGSTOP \{/gm)] : []);
  for (const deadline = performance.now() + 30_000; performance.now() < deadline; await Bun.sleep(20)) {
    const [first] = stops();
    if (first === undefined) {
      if (command.exitCode !== null) break;
      continue;
    }
    // The thread that linked may be one of its pool's: its process is what is continued.
    const pid = Number(/^Tgid:\s+(\d+)$/m.exec(readFileSync(`/proc/${first[1]}/status`, "utf8"))?.[1]);
    const end = async () => {
      let continued = 0;
      while (command.exitCode === null) {
        const seen = stops().length;
        if (seen > continued) process.kill(pid, "SIGCONT");
        continued = seen;
        await Bun.sleep(20);
      }
      return { code: await command.exited, stderr: await new Response(command.stderr).text() };
    };
    return { pid, end };
  }
  command.kill();
  throw new Error(`mcpmgr ${args.join(" ")} never reached a link(2): ${await new Response(command.stderr).text()}`);
}

test("a restart elsewhere just before a stop's record is left running and visible; the stop says it was started again", async () => {
  runCliOk(env, ["run", PROBE, "--name", "raced"]);
  const first = (await store.readStatus("raced"))?.pid as number;
  const stop = await stoppedAtFirstLink(["stop", "raced"]);
  // Stopped at the record of its stop: the supervisor is gone, and its own "stopped" is what the status says.
  expect(isProcessAlive(first)).toBe(false);
  expect((await store.readStatus("raced"))?.state).toBe("stopped");
  runCliOk(env, ["restart", "raced"]);
  const second = (await store.readStatus("raced"))?.pid as number;
  supervisors.push(second);
  expect(second === first || !isProcessAlive(second)).toBe(false);
  const { code, stderr } = await stop.end();
  // The restart's start stands, and `list` and `stop` find its supervisor.
  const status = await store.readStatus("raced");
  expect({ state: status?.state, pid: status?.pid, alive: isProcessAlive(second) }).toEqual({
    state: "running",
    pid: second,
    alive: true,
  });
  expect(runCliOk(env, ["list"]).stdout).toMatch(/raced\s+running/);
  // The stop's user is told its stop was overtaken, and how to stop it now.
  expect({ code, stderr }).toEqual({
    code: 1,
    stderr: expect.stringContaining(
      "raced was started again by another mcpmgr command while this stop waited for its supervisor to exit",
    ),
  });
  expect(stderr).toContain("'mcpmgr stop raced' stops it");
  expect(stderr).not.toContain("stopped raced");
  expect(runCliOk(env, ["stop", "raced"]).stderr).toContain("stopped raced");
  for (const deadline = performance.now() + 10_000; isProcessAlive(second) && performance.now() < deadline; )
    await Bun.sleep(50);
  expect(isProcessAlive(second)).toBe(false);
});

test("a restart still waiting for its start goes on waiting past the stop it overtook; an rm then stops and removes it", async () => {
  // A server that never answers: the restart's start stays under way.
  const run = spawnCli(["run", "npx://./test/fixtures/never-answers", "--name", "held"]);
  const first = await liveSupervisor("held");
  supervisors.push(first);
  const stop = await stoppedAtFirstLink(["stop", "held"]);
  expect(isProcessAlive(first)).toBe(false);
  await run.exited;
  const restart = spawnCli(["restart", "held"]);
  const second = await liveSupervisor("held", first);
  supervisors.push(second);
  const stopped = await stop.end();
  expect(stopped).toEqual({
    code: 1,
    stderr: expect.stringContaining("held was started again by another mcpmgr command"),
  });
  // Still the restart's start, which its command still waits for.
  const status = await store.readStatus("held");
  expect({ state: status?.state, pid: status?.pid, waiting: restart.exitCode }).toEqual({
    state: "starting",
    pid: second,
    waiting: null,
  });
  expect(runCliOk(env, ["rm", "held"]).stderr).toContain("removed held");
  expect(await restart.exited).toBe(1);
  expect(await new Response(restart.stderr).text()).toContain("held was removed while it was starting");
  expect(isProcessAlive(second)).toBe(false);
});
