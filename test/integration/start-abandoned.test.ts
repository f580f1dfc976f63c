/**
 * A background start whose command ends after it recorded "starting" and before the supervisor's
 * pid is written (a closed terminal, SIGKILL, a crash): nothing finishes that start, so the
 * workload must read as failed, like any workload whose supervisor is gone, not "starting" for good.
 *
 * The window is a few milliseconds. To hit it every time, the workload's proxy log is a FIFO with
 * no reader: `run` opens that log (to hand it to the supervisor) right after it writes "starting",
 * and the open blocks there. Nothing else changes: the command runs its own code to that point,
 * and is then killed for real.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import {
  copyFileSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";
import { makeTestCa } from "../support/test-ca.ts";

setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
let home: string;

function mcpmgr(...args: string[]) {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
    timeout: 120_000,
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

interface Row {
  name: string;
  status: string;
  lastError?: string;
}
const row = (name: string) =>
  (JSON.parse(mcpmgr("list", "--format", "json").stdout) as Row[]).find((r) => r.name === name);

async function until(predicate: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate() && Date.now() < deadline) await Bun.sleep(50);
  expect(predicate()).toBe(true);
}

function recordedStatus(name: string): { state?: string; pid?: number } {
  try {
    return JSON.parse(readFileSync(join(home, "state/workloads", name, "status.json"), "utf8"));
  } catch {
    return {};
  }
}

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-start-abandoned-"));
});

afterAll(async () => {
  mcpmgr("rm", "abandoned");
  await rm(home, { recursive: true, force: true });
});

/**
 * `mcpmgr run SOURCE --name NAME` held just after it recorded "starting" and before it spawns its
 * supervisor: its proxy log is a FIFO with no reader, which it opens at that point. `release` lets
 * it go on (the log a plain file again, the FIFO it opened read); `end` kills what is left.
 */
async function heldRun(name: string, source: string, executable = process.execPath, args: string[] = []) {
  const logs = join(home, "state/logs");
  mkdirSync(logs, { recursive: true });
  const proxyLog = join(logs, `${name}.proxy.log`);
  expect(Bun.spawnSync(["mkfifo", proxyLog]).exitCode).toBe(0);
  const run = Bun.spawn([executable, CLI_ENTRY, "run", source, "--name", name, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
    stdout: "ignore",
    stderr: "pipe",
  });
  await until(() => recordedStatus(name).state === "starting" || run.exitCode !== null);
  expect(run.exitCode).toBeNull();
  let drain: ReturnType<typeof Bun.spawn> | undefined;
  return {
    run,
    release() {
      const held = join(logs, `${name}.fifo`);
      renameSync(proxyLog, held);
      writeFileSync(proxyLog, "");
      drain = Bun.spawn(["cat", held], { stdout: "ignore" });
    },
    end() {
      run.kill("SIGKILL");
      drain?.kill();
    },
  };
}

/**
 * `mcpmgr start NAME` in another terminal, once it says it waits for the start under way (polled: a
 * loaded machine may take seconds to get it there, and the tests hold the other start until then).
 * `finish` gives its exit code and whole output.
 */
async function waitingStart(name: string) {
  const second = Bun.spawn([process.execPath, CLI_ENTRY, "start", name], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = second.stderr.getReader();
  const decoder = new TextDecoder();
  let stderr = "";
  const deadline = Date.now() + 30_000;
  // One read pending at a time: a read left behind by the timeout would take the next chunk with it.
  let pending = reader.read();
  while (!stderr.includes("; waiting for that start\n") && Date.now() < deadline) {
    const chunk = await Promise.race([pending, Bun.sleep(500).then(() => undefined)]);
    if (chunk === undefined) continue;
    if (chunk.done) break;
    stderr += decoder.decode(chunk.value, { stream: true });
    pending = reader.read();
  }
  expect(stderr).toContain("; waiting for that start\n");
  expect(second.exitCode).toBeNull();
  return {
    second,
    async finish() {
      for (let chunk = await pending; !chunk.done; chunk = await reader.read()) stderr += decoder.decode(chunk.value);
      const [code, stdout] = await Promise.all([second.exited, new Response(second.stdout).text()]);
      return { code, stdout, stderr };
    },
  };
}

test("a run killed after it recorded 'starting' and before its supervisor's pid: failed in list, and start and rm work", async () => {
  const { run } = await heldRun("abandoned", PROBE);
  run.kill("SIGKILL");
  await run.exited;
  // The FIFO only held the command in place: later starts get a plain log again.
  rmSync(join(home, "state/logs/abandoned.proxy.log"));
  expect(recordedStatus("abandoned").pid).toBeUndefined();

  // As for any workload whose mcpmgr process is gone: failed, saying why.
  const abandoned = row("abandoned");
  expect(abandoned?.status).toBe("failed");
  expect(abandoned?.lastError).toContain(`pid ${run.pid}`);
  expect(abandoned?.lastError).toContain("ended before it handed it to a supervisor");

  // `start` takes it up (it is not taken for a start under way), and `rm` removes it.
  const started = mcpmgr("start", "abandoned");
  expect(started.stderr).not.toContain("already running");
  expect(started.code).toBe(0);
  expect(row("abandoned")?.status).toBe("running");
  expect(mcpmgr("rm", "abandoned").code).toBe(0);
  expect(row("abandoned")).toBeUndefined();
});

test("a start while a run of the same workload is on its way to its supervisor waits for that start: no second supervisor, and no failure", async () => {
  // The run is held (the FIFO, as above) just after it recorded "starting" with its identity.
  const name = "underway";
  const held = await heldRun(name, "http://127.0.0.1:1/mcp");
  const { run } = held;
  try {
    // `start NAME` in another terminal meanwhile (`start --all` in two terminals after a reboot):
    // the run's start is under way, so no second supervisor (the two would race for the port, and
    // the loser's "failed" could hide the winner). Both asked for it to run: the start waits, and says so.
    const second = await waitingStart(name);

    // The run goes on: its log is a plain file again, and the FIFO it opened gets a reader.
    held.release();
    expect(await run.exited).toBe(0);
    expect(row(name)?.status).toBe("running");
    const { code, stdout, stderr } = await second.finish();
    expect([code, stderr]).toEqual([
      0,
      `[info] ${name} was started elsewhere at the same moment: another mcpmgr command (pid ${run.pid}) is starting it; waiting for that start\n` +
        `[info] ${name} was started by another mcpmgr command at the same moment; MCP clients connect to:\n`,
    ]);
    expect(stdout.trim()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(supervisorsOf(name)).toEqual([recordedStatus(name).pid as number]);
  } finally {
    held.end();
    mcpmgr("rm", name);
  }
  expect(supervisorsOf(name)).toEqual([]);
});

/**
 * An HTTPS validating webhook (a test CA's certificate) that refuses MCP's handshake (initialize,
 * server/discover) 3 s after it is asked: a workload using it reports "running", and the readiness
 * probe of the command that started it is refused 3 s later, which fails that start.
 */
async function refusingWebhook(): Promise<{ hooks: string; stop: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "mcpmgr-start-abandoned-ca-"));
  const certificates = await makeTestCa(dir);
  const webhook = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: Bun.file(certificates.cert), key: Bun.file(certificates.key) },
    async fetch(req) {
      const review = (await req.json()) as { mcp_request: { method: string } };
      const handshake = review.mcp_request.method === "initialize" || review.mcp_request.method === "server/discover";
      if (!handshake) return Response.json({ allowed: true });
      await Bun.sleep(3_000);
      return Response.json({ allowed: false, reason: "not yet" });
    },
  });
  const hooks = join(dir, "hooks.json");
  writeFileSync(
    hooks,
    JSON.stringify({
      validating: [
        {
          name: "gate",
          url: `https://127.0.0.1:${webhook.port}/`,
          tls_config: { ca_bundle_path: certificates.ca },
          timeout: "10s",
        },
      ],
    }),
  );
  return {
    hooks,
    async stop() {
      await webhook.stop(true);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

test("a start while another command's start of the workload fails says it failed: exit 1, no second supervisor", async () => {
  const name = "underway-fails";
  const held = await heldRun(name, "http://127.0.0.1:1/mcp");
  const { run } = held;
  try {
    // It waits for the run's start (as above); that run is killed before it spawned a supervisor.
    const second = await waitingStart(name);
    held.end();
    await run.exited;
    const { code, stderr } = await second.finish();
    expect(code).toBe(1);
    expect(stderr).toContain(
      `${name} was started elsewhere at the same moment: another mcpmgr command (pid ${run.pid}) is starting it; waiting for that start`,
    );
    // The failure says that start ended and why, not again that it is under way.
    expect(stderr).toContain(
      `${name} did not start: another mcpmgr command's start of it failed: the mcpmgr command (pid ${run.pid}) that was starting this workload ended before it handed it to a supervisor`,
    );
    expect(supervisorsOf(name)).toEqual([]);
  } finally {
    held.end();
    rmSync(join(home, `state/logs/${name}.proxy.log`), { force: true });
    mcpmgr("rm", name);
  }
});

test("a start waiting for another command's start does not take the supervisor's 'running' for that start's success: its readiness probe refused, exit 1", async () => {
  // The workload's webhook refuses MCP's handshake (initialize, server/discover), slowly: the supervisor reports "running", then the
  // run's readiness probe is refused (3 s later), and the run fails and stops it. The start waiting for
  // that run must not have said the workload runs (exit 0) in those 3 s.
  const { hooks, stop } = await refusingWebhook();
  const name = "underway-refused";
  const held = await heldRun(name, PROBE, process.execPath, ["--webhook-config", hooks]);
  try {
    const second = await waitingStart(name);
    held.release();
    expect(await held.run.exited).not.toBe(0);
    const { code, stdout, stderr } = await second.finish();
    expect(stderr).not.toContain("was started by another mcpmgr command");
    expect([code, stdout]).toEqual([1, ""]);
    expect(stderr).toContain(`${name} was started elsewhere at the same moment`);
    expect(stderr).toContain(`${name} did not start: another mcpmgr command's start of it `);
    expect(supervisorsOf(name)).toEqual([]);
  } finally {
    held.end();
    await stop();
    rmSync(join(home, `state/logs/${name}.proxy.log`), { force: true });
    mcpmgr("rm", name);
  }
});

test("a start while another command's start has spawned its supervisor waits for that start too: exit 1 when it fails, not 'already running'", async () => {
  // `start --all` in two terminals, the other a moment ahead: its supervisor is spawned and starting
  // (the server takes 3 s), and that start then fails (its readiness probe refused, 3 s more).
  const { hooks, stop } = await refusingWebhook();
  const name = "spawned-refused";
  const run = Bun.spawn(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      PROBE,
      "--name",
      name,
      "--webhook-config",
      hooks,
      "--",
      "--slow-start",
      "3000",
    ],
    { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home }, stdout: "ignore", stderr: "pipe" },
  );
  try {
    await until(
      () =>
        (recordedStatus(name).state === "starting" && recordedStatus(name).pid !== undefined) || run.exitCode !== null,
    );
    const second = await waitingStart(name);
    expect(await run.exited).not.toBe(0);
    const { code, stdout, stderr } = await second.finish();
    expect([code, stdout]).toEqual([1, ""]);
    expect(stderr).toContain(`${name} was started elsewhere: its supervisor (pid `);
    expect(stderr).toContain(`${name} did not start: another mcpmgr command's start of it `);
    expect(supervisorsOf(name)).toEqual([]);
  } finally {
    run.kill("SIGKILL");
    await stop();
    mcpmgr("rm", name);
  }
});

test("a stop in the instant between a run's 'starting' and its supervisor stops that start: nothing runs after it", async () => {
  // The run is held (the FIFO, as above) with "starting" recorded and no supervisor yet.
  const name = "stopped-early";
  const held = await heldRun(name, "http://127.0.0.1:1/mcp");
  const { run } = held;
  try {
    const stopped = mcpmgr("stop", name);
    expect([stopped.code, stopped.stderr]).toEqual([0, expect.stringContaining(`stopped ${name}`)]);
    expect(recordedStatus(name).state).toBe("stopped");

    // The run goes on to spawn its supervisor, which finds its start stopped and exits.
    held.release();
    expect(await run.exited).toBe(1);
    expect(await new Response(run.stderr).text()).toContain(`${name} was stopped while it was starting`);
    await until(() => supervisorsOf(name).length === 0);
    expect(row(name)?.status).toBe("stopped");
  } finally {
    held.end();
    mcpmgr("rm", name);
  }
});

/** The live `__supervise NAME` processes. */
function supervisorsOf(name: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      const at = argv.indexOf("__supervise");
      if (at !== -1 && argv[at + 1] === name) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

test("a supervisor that cannot be spawned (mcpmgr's executable gone meanwhile) fails the run at once, in one line", async () => {
  // The run is held (the FIFO, as above) just before it spawns its supervisor; its executable, a
  // link of Bun's of its own, is then removed, as an upgrade that replaces the binary would.
  const name = "unspawnable";
  const bin = await mkdtemp(join(tmpdir(), "mcpmgr-unspawnable-"));
  const executable = join(bin, "bun");
  try {
    linkSync(process.execPath, executable);
  } catch {
    copyFileSync(process.execPath, executable);
  }
  const held = await heldRun(name, "http://127.0.0.1:1/mcp", executable);
  const { run } = held;
  try {
    rmSync(executable);
    held.release();
    // Before: a stack trace (the spawn's unheard "error" event), then the whole ready timeout (200 s).
    const outcome = await Promise.race([run.exited, Bun.sleep(20_000).then(() => "still waiting")]);
    expect(outcome).toBe(1);
    const stderr = await new Response(run.stderr).text();
    expect(stderr).toContain(`${name} failed to start: its supervisor could not be started`);
    expect(stderr).toContain("ENOENT");
    expect(stderr).not.toMatch(/^\s+at /m);
    // `run` keeps nothing of a workload that did not start.
    expect(row(name)).toBeUndefined();
  } finally {
    held.end();
    await rm(bin, { recursive: true, force: true });
    mcpmgr("rm", name);
  }
});
