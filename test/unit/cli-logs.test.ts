/**
 * `mcpmgr logs NAME` on a log that has grown large (MCPMGR_MAX_LOG_BYTES set high, or written
 * by an older version, which did not rotate logs): copied whole, in bounded memory, and a reader
 * that goes away early (`| head`) ends it quietly; a remote's logs are its proxy log. Rotation itself:
 * test/integration/workload-logs.test.ts.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { closeSync, constants, openSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { CLI_ENTRY } from "../support/processes.ts";

// Subprocesses of the CLI and a 256 MiB file: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

const LOG_BYTES = 256 * 1024 * 1024;
let dir: string;
let home: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-logs-"));
  home = join(dir, "home");
  const store = new WorkloadStore(resolvePaths({ MCPMGR_HOME: home }));
  await store.create({
    name: "chatty",
    source: { kind: "package", ref: "npx://chatty-mcp-server" },
    transport: "stdio",
    proxyPort: 41_301,
    runtime: "process",
  });
  // A remote: nothing of its server runs here, only the supervisor writes (its proxy log).
  await store.create({
    name: "far",
    source: { kind: "remote", ref: "https://mcp.example.com/mcp" },
    transport: "streamable-http",
    proxyPort: 41_302,
    runtime: "remote",
  });
  await mkdir(dirname(store.proxyLogPath("far")), { recursive: true });
  await writeFile(store.proxyLogPath("far"), "[info] far running at http://127.0.0.1:41302/mcp\n");
  // Nothing written yet: a gateway and a remote (their log is the supervisor's), a stdio server.
  await store.create({
    name: "quiet-gateway",
    source: { kind: "gateway", ref: "default" },
    transport: "streamable-http",
    proxyPort: 41_303,
    runtime: "gateway",
  });
  await store.create({
    name: "quiet-remote",
    source: { kind: "remote", ref: "https://mcp.example.com/mcp" },
    transport: "streamable-http",
    proxyPort: 41_304,
    runtime: "remote",
  });
  await store.create({
    name: "quiet-stdio",
    source: { kind: "package", ref: "npx://quiet-mcp-server" },
    transport: "stdio",
    proxyPort: 41_305,
    runtime: "process",
  });
  const line = "a line the server wrote, one of very many over the weeks\n";
  await mkdir(dirname(store.logPath("chatty")), { recursive: true });
  await writeFile(store.logPath("chatty"), line.repeat(Math.ceil(LOG_BYTES / line.length)));
});

const logPath = () => new WorkloadStore(resolvePaths({ MCPMGR_HOME: home })).logPath("chatty");

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function logs(stdout: "pipe" | number | ReturnType<typeof Bun.file> = "pipe", name = "chatty", ...flags: string[]) {
  return Bun.spawn([process.execPath, CLI_ENTRY, "logs", name, ...flags], {
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
    stdout,
    stderr: "pipe",
  });
}

/** The process's resident memory, in bytes (Linux); 0 once it is gone. */
function residentBytes(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

test("a large log is copied whole", async () => {
  const out = join(dir, "copied.log");
  const child = logs(Bun.file(out));
  expect(await child.exited).toBe(0);
  expect(statSync(out).size).toBe(statSync(logPath()).size);
});

test("a large log is not held in memory: a slow reader makes the copy wait, not grow", async () => {
  // A named pipe nobody reads: it fills at 64 KiB and the copy waits there, holding what it read.
  const fifo = join(dir, "slow-reader");
  expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
  const readEnd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const writeEnd = openSync(fifo, constants.O_WRONLY);
  const child = logs(writeEnd);
  closeSync(writeEnd);
  let peak = 0;
  for (let i = 0; i < 30; i++) {
    await Bun.sleep(100);
    peak = Math.max(peak, residentBytes(child.pid));
  }
  child.kill();
  await child.exited;
  closeSync(readEnd);
  expect(peak).toBeGreaterThan(0);
  // Bun itself is ~50 MB; the whole log would be 256 MiB more.
  expect(peak).toBeLessThan(160 * 1024 * 1024);
});

test("a reader that stops early (mcpmgr logs NAME | head) ends it at once, exit 0, with no error", async () => {
  const child = logs();
  const reader = (child.stdout as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  await reader.cancel();
  const ended = await Promise.race([child.exited, Bun.sleep(15_000).then(() => "still running")]);
  if (ended === "still running") child.kill();
  expect(ended).toBe(0);
  expect(await new Response(child.stderr).text()).toBe("");
});

test("a remote workload's logs are its proxy log, without --proxy (there is no server output to show)", async () => {
  const child = logs("pipe", "far");
  expect(await child.exited).toBe(0);
  expect(await new Response(child.stdout as ReadableStream).text()).toBe(
    "[info] far running at http://127.0.0.1:41302/mcp\n",
  );
  expect(await new Response(child.stderr).text()).toBe("");
});

test("an empty log says what it holds, for each kind: a gateway's and a remote's are their supervisor's, never 'no output'", async () => {
  const said = async (name: string, ...flags: string[]) => {
    const child = logs("pipe", name, ...flags);
    expect(await child.exited).toBe(0);
    expect(await new Response(child.stdout as ReadableStream).text()).toBe("");
    return (await new Response(child.stderr).text()).trim();
  };
  const gateway =
    "[info] quiet-gateway's log is empty so far: a gateway runs no server of its own, so its log holds its supervisor's lines (each start and stop, warnings, errors)";
  expect(await said("quiet-gateway")).toBe(gateway);
  // --proxy names the same log for them: the same words.
  expect(await said("quiet-gateway", "--proxy")).toBe(gateway);
  expect(await said("quiet-remote")).toBe(
    "[info] quiet-remote's log is empty so far: a remote workload's server runs elsewhere, so its log holds its supervisor's lines (each start and stop, login URLs, errors)",
  );
  expect(await said("quiet-stdio")).toBe(
    "[info] quiet-stdio's log is empty so far: it holds what its server writes, each run opened by a timed 'mcpmgr: ---- quiet-stdio starts' line (its supervisor's lines: 'mcpmgr logs quiet-stdio --proxy')",
  );
  expect(await said("quiet-stdio", "--proxy")).toBe(
    "[info] quiet-stdio's proxy log is empty so far: it holds its supervisor's lines (each start, restart and stop, errors)",
  );
});

test("following an empty log says the same first, then follows (it showed nothing at all)", async () => {
  for (const [name, flags, note] of [
    ["quiet-gateway", [], "[info] quiet-gateway's log is empty so far: a gateway runs no server of its own"],
    ["quiet-remote", [], "[info] quiet-remote's log is empty so far: a remote workload's server runs elsewhere"],
    ["quiet-stdio", ["--proxy"], "[info] quiet-stdio's proxy log is empty so far"],
  ] as const) {
    const child = logs("pipe", name, "--follow", ...flags);
    try {
      const reader = child.stderr.getReader();
      let text = "";
      // Until its first line, or 15 s without one (an old mcpmgr said nothing: the test fails, not hangs).
      const deadline = Bun.sleep(15_000).then(() => ({ value: undefined, done: true }));
      while (!text.includes("\n")) {
        const { value, done } = await Promise.race([reader.read(), deadline]);
        if (done || value === undefined) break;
        text += new TextDecoder().decode(value);
      }
      expect(text).toStartWith(note);
      // Still following: nothing has ended it.
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill();
      await child.exited;
    }
  }
});
