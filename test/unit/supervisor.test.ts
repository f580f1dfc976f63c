/**
 * The supervisor's restart loop, with an injected clock and sleep: what it reports, how long
 * it waits between restarts, when the backoff starts over, and how it stops. Each "start"
 * hands back a workload whose exit the test decides.
 */
import { expect, test } from "bun:test";
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { McpmgrError } from "../../src/errors.ts";
import type { RunningWorkload } from "../../src/workload/start.ts";
import { cappedLog, copyNew, copyWhole, READER_GONE } from "../../src/state/log-files.ts";
import { restartLoop, type StatusReport } from "../../src/workload/supervisor.ts";

const timings = { firstBackoffMs: 1_000, maxBackoffMs: 4_000, stableAfterMs: 60_000 };
const quietLog: Record<"debug" | "info" | "warn" | "error", (message: string) => void> = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};

/** A workload that exits when the test says so (with a reason), and counts its stops (and which were restarts). */
function workload() {
  let exit!: (why: string) => void;
  const exited = new Promise<string>((resolve) => (exit = resolve));
  const running = {
    url: "http://127.0.0.1:1/mcp",
    exited,
    stops: 0,
    restartingStops: 0,
    stop: async (options?: { restarting?: boolean }) => {
      running.stops++;
      if (options?.restarting) running.restartingStops++;
    },
  };
  return { running: running as RunningWorkload & { stops: number; restartingStops: number }, exit };
}

function harness(starts: ((signal: AbortSignal) => Promise<RunningWorkload>)[], log: typeof quietLog = quietLog) {
  const reports: StatusReport[] = [];
  const sleeps: number[] = [];
  let clock = 0;
  let stop!: () => void;
  const stopping = new Promise<void>((resolve) => (stop = resolve));
  let started = 0;
  const done = restartLoop({
    name: "demo",
    start: (signal) => {
      const next = starts[started++];
      // Out of scripted starts: the test is over, the supervisor is asked to stop.
      if (next === undefined) {
        stop();
        return Promise.resolve(workload().running);
      }
      return next(signal);
    },
    report: async (status) => void reports.push(status),
    stopping,
    log,
    timings,
    sleep: async (ms) => void sleeps.push(ms),
    now: () => clock,
    cancelGraceMs: 2_000,
  });
  return {
    reports,
    sleeps,
    done,
    stop,
    advance: (ms: number) => void (clock += ms),
    started: () => started,
  };
}

/** Lets the loop run until `condition` holds (it runs on promises: a few turns at most). */
async function until(condition: () => boolean): Promise<void> {
  for (let turn = 0; turn < 1_000 && !condition(); turn++) await Bun.sleep(0);
  expect(condition()).toBe(true);
}

test("a first start failing with a hint reports the hint and the code too, for run to print", async () => {
  const busy = new McpmgrError("PORT_IN_USE", "port 4000 on 127.0.0.1 is already in use", {
    hint: "choose another port, or leave the port option out to pick a free one",
  });
  const h = harness([() => Promise.reject(busy)]);
  await h.done.catch(() => {});
  expect(h.reports[1]).toEqual({
    state: "failed",
    restarts: 0,
    lastError: "port 4000 on 127.0.0.1 is already in use",
    lastHint: "choose another port, or leave the port option out to pick a free one",
    lastCode: "PORT_IN_USE",
  });
});

test("the first start failing is reported as failed and thrown, not retried", async () => {
  const h = harness([() => Promise.reject(new McpmgrError("SERVER_FAILED", "did not complete the MCP handshake"))]);
  const err = await h.done.catch((e: unknown) => e);
  expect((err as McpmgrError).code).toBe("SERVER_FAILED");
  expect(h.reports.map((r) => r.state)).toEqual(["starting", "failed"]);
  expect(h.reports[1]?.lastError).toBe("did not complete the MCP handshake");
  expect(h.started()).toBe(1);
});

test("a crashed server is restarted with a doubling backoff, capped, and its reason recorded", async () => {
  const runs = [workload(), workload(), workload(), workload()];
  const h = harness(runs.map((run) => async () => run.running));
  for (const [i, run] of runs.entries()) {
    await until(() => h.reports.at(-1)?.state === "running" && h.started() === i + 1);
    expect(h.reports.at(-1)).toEqual({ state: "running", restarts: i });
    run.exit(`the MCP server exited with code ${i + 1}; its last output:\nboom`);
    await until(() => run.running.stops === 1);
  }
  await h.done;
  expect(h.sleeps).toEqual([1_000, 2_000, 4_000, 4_000]);
  const restarting = h.reports.filter((r) => r.state === "restarting");
  expect(restarting.map((r) => r.lastError)).toEqual([
    "the MCP server exited with code 1; its last output:",
    "the MCP server exited with code 2; its last output:",
    "the MCP server exited with code 3; its last output:",
    "the MCP server exited with code 4; its last output:",
  ]);
});

test("each crash's line in the log says when the restart is, before the server's last output, with the backoff it waits", async () => {
  const warnings: string[] = [];
  const runs = [workload(), workload(), workload()];
  const h = harness(
    runs.map((run) => async () => run.running),
    { ...quietLog, warn: (message: string) => void warnings.push(message) },
  );
  const running = (n: number) => () => h.started() === n && h.reports.at(-1)?.state === "running";
  await until(running(1));
  runs[0]?.exit("the MCP server exited with code 7; its last output:\nboom\nbang");
  await until(running(2));
  runs[1]?.exit("the MCP server exited with code 7");
  await until(running(3));
  // It ran long enough: the backoff starts over, and the line says so.
  h.advance(timings.stableAfterMs + 1);
  runs[2]?.exit("the MCP server exited with code 9; its last output:\nfine until now");
  await h.done;
  expect(warnings).toEqual([
    "demo: the MCP server exited with code 7; restarting in 1 s; its last output:\n  boom\n  bang",
    "demo: the MCP server exited with code 7; restarting in 2 s",
    "demo: the MCP server exited with code 9; restarting in 1 s; its last output:\n  fine until now",
  ]);
  expect(h.sleeps).toEqual([1_000, 2_000, 1_000]);
  // The status keeps the reason as it was.
  expect(h.reports.filter((r) => r.state === "restarting").map((r) => r.lastError)).toEqual([
    "the MCP server exited with code 7; its last output:",
    "the MCP server exited with code 7",
    "the MCP server exited with code 9; its last output:",
  ]);
});

test("a server that ran long enough before crashing starts over with the short backoff", async () => {
  const runs = [workload(), workload(), workload()];
  const h = harness(runs.map((run) => async () => run.running));
  const running = (n: number) => () => h.started() === n && h.reports.at(-1)?.state === "running";
  await until(running(1));
  runs[0]?.exit("crash");
  await until(running(2));
  runs[1]?.exit("crash");
  await until(running(3));
  h.advance(timings.stableAfterMs + 1);
  runs[2]?.exit("crash");
  await h.done;
  expect(h.sleeps).toEqual([1_000, 2_000, 1_000]);
});

test("a later start that fails is retried; being stopped stops the running workload and ends the loop", async () => {
  const first = workload();
  const second = workload();
  const h = harness([
    async () => first.running,
    () => Promise.reject(new Error("port busy")),
    async () => second.running,
  ]);
  await until(() => h.reports.at(-1)?.state === "running");
  first.exit("crash");
  await until(() => h.started() === 3 && h.reports.at(-1)?.state === "running");
  expect(h.reports.some((r) => r.state === "restarting" && r.lastError === "port busy")).toBe(true);
  expect(h.reports.at(-1)?.state).toBe("running");
  h.stop();
  expect(await h.done).toBe(2);
  expect(second.running.stops).toBe(1);
  // A crash keeps the listener for the restart; being stopped does not.
  expect(first.running.restartingStops).toBe(1);
  expect(second.running.restartingStops).toBe(0);
});

test("being stopped while a start is under way aborts that start and ends the loop as stopped, not failed", async () => {
  let given: AbortSignal | undefined;
  // A start that would not end on its own (a server that never becomes ready): it ends when aborted.
  const h = harness([
    (signal) =>
      new Promise<RunningWorkload>((_, reject) => {
        given = signal;
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      }),
  ]);
  await until(() => h.started() === 1);
  h.stop();
  expect(await h.done).toBe(0);
  expect(given?.aborted).toBe(true);
  expect((given?.reason as McpmgrError | undefined)?.code).toBe("CANCELLED");
  expect(h.reports.map((r) => r.state)).toEqual(["starting"]);
  expect(h.started()).toBe(1);
});

test("a start that still brings its workload up after being told to stop has that workload stopped", async () => {
  const late = workload();
  let finish!: () => void;
  const h = harness([() => new Promise<RunningWorkload>((resolve) => (finish = () => resolve(late.running)))]);
  await until(() => h.started() === 1);
  h.stop();
  await Bun.sleep(0);
  finish();
  expect(await h.done).toBe(0);
  expect(late.running.stops).toBe(1);
  expect(h.reports.map((r) => r.state)).toEqual(["starting"]);
});

test("a later start that fails is in the log with its reason and when the next attempt is, not only in the status", async () => {
  const warnings: string[] = [];
  const first = workload();
  const h = harness(
    [
      async () => first.running,
      () =>
        Promise.reject(
          new McpmgrError("RUNTIME_UNAVAILABLE", "Cannot connect to the Docker daemon", { hint: "start Docker" }),
        ),
      async () => workload().running,
    ],
    { ...quietLog, warn: (message: string) => void warnings.push(message) },
  );
  await until(() => h.reports.at(-1)?.state === "running");
  first.exit("the MCP server exited with code 143");
  await until(() => h.started() === 3 && h.reports.at(-1)?.state === "running");
  h.stop();
  await h.done;
  expect(warnings).toEqual([
    "demo: the MCP server exited with code 143; restarting in 1 s",
    "demo: restarting failed: Cannot connect to the Docker daemon (hint: start Docker); trying again in 2 s",
  ]);
});

test("the workload log is rotated once it reaches the cap, counting what an earlier run left in it", () => {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-capped-log-"));
  try {
    const path = join(dir, "w.log");
    const rotated = `${path}.1`;
    writeFileSync(path, "from before\n".repeat(50)); // 600 bytes an earlier supervisor wrote
    writeFileSync(rotated, "oldest\n");
    const write = cappedLog(path, rotated, 1024);
    write(`${"a".repeat(399)}\n`); // 1,000 bytes: under the cap
    expect(readFileSync(rotated, "utf8")).toBe("oldest\n");
    write(`${"é".repeat(11)}\n`); // 23 bytes (not 12 characters): 1,023
    expect(readFileSync(rotated, "utf8")).toBe("oldest\n");
    write("b\n"); // 1,025: rotated, replacing the older part
    expect(readFileSync(rotated, "utf8").endsWith("b\n")).toBe(true);
    expect(readFileSync(rotated, "utf8").length).toBeGreaterThan(1000);
    expect(existsSync(path)).toBe(false);
    write("c\n");
    expect(readFileSync(path, "utf8")).toBe("c\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a log rotated in place stays the file its descriptors write to, and a follower reads the rest of it from the copy", async () => {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-capped-log-"));
  try {
    const path = join(dir, "w.proxy.log");
    const rotated = `${path}.1`;
    const files = { path, rotated };
    // As a supervisor's stdout and stderr are: opened once, for appending.
    const fd = openSync(path, "a", 0o600);
    const write = cappedLog(path, rotated, 1024, { inPlace: true });
    const line = (letter: string) => `${letter.repeat(599)}\n`;
    let followed = "";
    const sink = async (chunk: Buffer) => {
      followed += chunk.toString();
      return true;
    };
    write(line("a"));
    const at = await copyWhole(files, sink);
    if (at === READER_GONE) throw new Error("reader gone");
    write(line("b")); // 1,200 bytes: rotated
    writeSync(fd, "from the runtime 1\n");
    const next = await copyNew(files, at, sink);
    if (next === READER_GONE) throw new Error("reader gone");
    // The rest of the log before it was emptied (from the copy), then the log again.
    expect(followed).toBe(`${line("a")}${line("b")}from the runtime 1\n`);
    write(line("c"));
    write(line("d")); // rotated again
    writeSync(fd, "from the runtime 2\n");
    closeSync(fd);
    expect(readFileSync(path, "utf8")).toBe("from the runtime 2\n");
    expect(readFileSync(rotated, "utf8")).toBe(`from the runtime 1\n${line("c")}${line("d")}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the running status says the workload holds secrets only for a start that has them, its draining status too", async () => {
  const withSecrets = workload();
  const without = workload();
  const draining = workload();
  const h = harness([async () => ({ ...withSecrets.running, holdsSecrets: true }), async () => without.running]);
  await until(() => h.reports.at(-1)?.state === "running");
  expect(h.reports.at(-1)).toEqual({ state: "running", restarts: 0, holdsSecrets: true });
  // Crashed, and started again from an env file whose key was taken out: no flag left over from the last start.
  withSecrets.exit("the MCP server exited with code 1");
  await until(() => h.reports.at(-1)?.state === "running" && h.started() === 2);
  expect(h.reports.map((r) => [r.state, r.holdsSecrets === true])).toEqual([
    ["starting", false],
    ["running", true],
    ["restarting", false],
    ["running", false],
  ]);
  h.stop();
  await h.done;
  // Stopped with requests in progress: the draining status still says so (a gateway keeps withholding).
  const d = harness([
    async () => ({
      ...draining.running,
      holdsSecrets: true,
      stop: async (options?: { onRequestsInProgress?: () => Promise<unknown> }) => {
        await options?.onRequestsInProgress?.();
      },
    }),
  ]);
  await until(() => d.reports.at(-1)?.state === "running");
  d.stop();
  await d.done;
  expect(d.reports.filter((r) => r.draining)).toEqual([
    { state: "running", restarts: 0, draining: true, holdsSecrets: true },
  ]);
});
