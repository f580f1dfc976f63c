/**
 * A background workload's log under a size cap (MCPMGR_MAX_LOG_BYTES), with a real supervisor
 * and a chatty stdio server: the log is rotated to `<log>.1` at the cap, `logs` shows both parts
 * in order, `logs -f` follows across rotations without losing or repeating a line, `rm` removes
 * both, and a bad value is refused in one line. The proxy's own log (a background gateway's audit
 * lines) is rotated the same way.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { expectOneLineError } from "../support/cli-home.ts";
import { emptyResultUpstream } from "../support/json-rpc-upstream.ts";
import { CLI_ENTRY, followLogs, REPO_ROOT } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(90_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
const CAP = 4096;
/** "chatty line 000001 " and 40 x's and a newline. */
const LINE_BYTES = 60;
let home: string;
let store: WorkloadStore;

function mcpmgr(extraEnv: Record<string, string>, ...args: string[]) {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, ...extraEnv },
    timeout: 120_000,
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}
const capped = { MCPMGR_MAX_LOG_BYTES: String(CAP) };

async function until(predicate: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate() && Date.now() < deadline) await Bun.sleep(50);
  expect(predicate()).toBe(true);
}

/** Has the server write lines `from` … `from + count - 1` to its stderr (the workload log). */
async function chat(url: string, from: number, count: number): Promise<void> {
  const client = new Client({ name: "workload-logs-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    await client.callTool({ name: "log_lines", arguments: { from, count } });
  } finally {
    await client.close();
  }
}

/** The numbers of the chatty lines in `text`, in order. */
const numbers = (text: string) => [...text.matchAll(/^chatty line (\d+) x+$/gm)].map((m) => Number(m[1]));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const read = (path: string) => (existsSync(path) ? readFileSync(path, "utf8") : "");

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-workload-logs-"));
  store = new WorkloadStore(resolvePaths({ MCPMGR_HOME: home }));
});

afterAll(async () => {
  for (const name of [
    "rotating",
    "followed",
    "later-bad",
    "gw-logs",
    "gw-crash",
    "remote-audit",
    "marked",
    "unended",
    "telemetry-log",
  ])
    mcpmgr({}, "rm", name);
  await rm(home, { recursive: true, force: true });
});

test("the log rotates at the cap; logs shows the rotated part, then the current one; rm removes both", async () => {
  const started = mcpmgr(capped, "run", PROBE, "--name", "rotating");
  expect(started.code).toBe(0);
  const url = started.stdout.trim();
  const log = store.logPath("rotating");
  const rotated = store.rotatedLogPath("rotating");
  const logs = () => mcpmgr({}, "logs", "rotating").stdout;

  await chat(url, 1, 50);
  await until(() => numbers(read(log)).at(-1) === 50);
  expect(existsSync(rotated)).toBe(false); // 3,000 bytes and the start-up line: under the cap
  await chat(url, 51, 30);
  await until(() => existsSync(rotated));
  await chat(url, 81, 10);
  await until(() => numbers(logs()).at(-1) === 90);
  // The rotated part holds at least the cap, cut after a whole line; the new log starts with one.
  expect(statSync(rotated).size).toBeGreaterThanOrEqual(CAP);
  expect(statSync(rotated).size).toBeLessThan(CAP + 30 * LINE_BYTES + 100);
  expect(read(rotated).endsWith("\n")).toBe(true);
  expect(read(log)).toMatch(/^chatty line \d+ x+\n/);
  expect(statSync(log).size).toBeLessThan(CAP);
  const shown = logs();
  expect(shown).toBe(read(rotated) + read(log));
  expect(shown).toContain("sandbox-probe ready");
  expect(numbers(shown)).toEqual(range(1, 90));

  // Past the cap again: the older rotated part is replaced, and what logs shows still holds the cap's worth.
  await chat(url, 91, 80);
  await until(() => numbers(logs()).at(-1) === 170);
  const later = logs();
  expect(later).toBe(read(rotated) + read(log));
  expect(later).not.toContain("sandbox-probe ready");
  const seen = numbers(later);
  expect(seen[0]).toBeGreaterThan(1);
  expect(seen).toEqual(range(seen[0] as number, 170));
  expect(later.length).toBeGreaterThanOrEqual(CAP);

  expect(mcpmgr({}, "rm", "rotating").code).toBe(0);
  expect(readdirSync(store.paths.logDir).filter((file) => file.startsWith("rotating."))).toEqual([]);
});

test("each run of a workload begins with a timed line in its log, which logs and logs -f show; nothing of its options", async () => {
  const started = mcpmgr({}, "run", PROBE, "--name", "marked", "-e", "PROBE_TOKEN=marker-s3cret-value");
  expect(started.code).toBe(0);
  const follower = followLogs(home, ["marked"]);
  try {
    const markers = (text: string) =>
      text.split("\n").filter((line) => /^mcpmgr: ---- marked starts, \d{4}-\d\d-\d\dT[\d:.]+Z ----$/.test(line));
    await until(() => markers(read(store.logPath("marked"))).length === 1);
    expect(mcpmgr({}, "restart", "marked").code).toBe(0);
    await until(() => markers(follower.text()).length === 2);
    const shown = mcpmgr({}, "logs", "marked").stdout;
    // Each run: its marker, then what the server said as it started.
    expect(
      shown.split("\n").filter((line) => markers(line).length > 0 || line.includes("sandbox-probe ready")),
    ).toEqual([
      expect.stringContaining("marked starts"),
      expect.stringContaining("sandbox-probe ready"),
      expect.stringContaining("marked starts"),
      expect.stringContaining("sandbox-probe ready"),
    ]);
    const [first, second] = markers(shown).map((line) => Date.parse(line.split(" ")[4] ?? ""));
    expect(second).toBeGreaterThan(first as number);
    expect(shown).not.toContain("marker-s3cret-value");
  } finally {
    expect(mcpmgr({}, "rm", "marked").code).toBe(0);
    expect(await follower.end()).toBe(0);
  }
});

test("a run's timed line starts a line of its own after a server whose last words did not end theirs", async () => {
  const started = mcpmgr({}, "run", PROBE, "--name", "unended");
  expect(started.code).toBe(0);
  try {
    const url = started.stdout.trim();
    const client = new Client({ name: "workload-logs-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    await client.callTool({ name: "crash", arguments: { last_words: "fatal: no line end" } });
    await client.close().catch(() => {});
    const marker = /^mcpmgr: ---- unended starts, \d{4}-\d\d-\d\dT[\d:.]+Z ----$/;
    await until(
      () =>
        read(store.logPath("unended"))
          .split("\n")
          .filter((line) => marker.test(line)).length === 2,
    );
    const lines = mcpmgr({}, "logs", "unended").stdout.split("\n");
    expect(lines).toContain("fatal: no line end");
    expect(lines.filter((line) => line.includes("unended starts")).every((line) => marker.test(line))).toBe(true);
  } finally {
    expect(mcpmgr({}, "rm", "unended").code).toBe(0);
  }
});

test("logs -f follows across rotations: every line once, in order", async () => {
  const started = mcpmgr(capped, "run", PROBE, "--name", "followed");
  expect(started.code).toBe(0);
  const url = started.stdout.trim();
  const follower = followLogs(home, ["followed"]);
  try {
    await until(() => follower.text().includes("sandbox-probe ready"));
    // Batches of 20 lines (1,200 bytes): the cap is passed every fourth batch, each time
    // while the follower still has the lines before the rotation to read.
    const batches = 12;
    for (let batch = 0; batch < batches; batch++) {
      await chat(url, batch * 20 + 1, 20);
      await until(() => numbers(follower.text()).at(-1) === batch * 20 + 20);
    }
    expect(existsSync(store.rotatedLogPath("followed"))).toBe(true);
    expect(numbers(follower.text())).toEqual(range(1, batches * 20));
    expect(follower.text().split("sandbox-probe ready")).toHaveLength(2);
  } finally {
    expect(mcpmgr({}, "rm", "followed").code).toBe(0);
    await follower.end();
  }
});

test("the proxy's log rotates at the cap too: logs --proxy shows both parts, -f follows, rm removes both", async () => {
  const started = mcpmgr(capped, "gateway", "default", "--detach", "--name", "gw-logs", "--enable-audit");
  expect(started.code).toBe(0);
  const url = started.stdout.trim();
  const proxyLog = store.proxyLogPath("gw-logs");
  const rotated = `${proxyLog}.1`;
  const follower = followLogs(home, ["gw-logs", "--proxy"]);
  // One audit line per request, each with its own id (about 300 bytes a line).
  const ids = (text: string) => [...text.matchAll(/^\{"id":"([0-9a-f-]+)"/gm)].map((m) => m[1]);
  try {
    await until(() => follower.text().includes("gw-logs running at"));
    while (!existsSync(rotated)) {
      const client = new Client({ name: "workload-logs-test", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      await client.listTools();
      await client.close();
    }
    expect(statSync(rotated).size).toBeGreaterThanOrEqual(CAP);
    expect(statSync(rotated).size).toBeLessThan(CAP + 2_000);
    const shown = mcpmgr({}, "logs", "gw-logs", "--proxy").stdout;
    expect(shown).toBe(read(rotated) + read(proxyLog));
    expect(shown).toContain("gw-logs running at");
    const written = ids(shown);
    expect(written.length).toBeGreaterThan(10);
    await until(() => ids(follower.text()).length >= written.length);
    expect(ids(follower.text()).slice(0, written.length)).toEqual(written);
  } finally {
    expect(mcpmgr({}, "rm", "gw-logs").code).toBe(0);
    await follower.end();
  }
  expect(readdirSync(store.paths.logDir).filter((file) => file.startsWith("gw-logs."))).toEqual([]);
});

test("what the runtime writes to a supervisor's stdout and stderr after rotations is in logs --proxy (a crash report)", async () => {
  const started = mcpmgr(capped, "gateway", "default", "--detach", "--name", "gw-crash", "--enable-audit");
  expect(started.code).toBe(0);
  const url = started.stdout.trim();
  try {
    const shown = () => mcpmgr({}, "logs", "gw-crash", "--proxy").stdout;
    // Real proxy log volume (an audit line per request) until the start's own line has rotated out:
    // the log was rotated at least twice, so the file the supervisor was started on is no longer shown.
    while (shown().includes("gw-crash running at")) {
      const client = new Client({ name: "workload-logs-test", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      await client.listTools();
      await client.close();
    }
    // A Bun crash: its report goes to the process's stderr (fd 2) from the runtime, past any JS logging.
    const pid = (await store.readStatus("gw-crash"))?.pid as number;
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, "SIGSEGV");
    await until(() => shown().includes("Segmentation fault"));
    expect(shown()).toContain("Bun has crashed");
    // Still within the cap (twice it, with the rotated part), crash report included.
    const proxyLog = store.proxyLogPath("gw-crash");
    expect(statSync(proxyLog).size + statSync(`${proxyLog}.1`).size).toBeLessThan(2 * CAP + 4_000);
  } finally {
    expect(mcpmgr({}, "rm", "gw-crash").code).toBe(0);
  }
});

test("a bad MCPMGR_MAX_LOG_BYTES is a one-line error naming it, before anything is recorded", () => {
  const refused = mcpmgr({ MCPMGR_MAX_LOG_BYTES: "10MB" }, "run", PROBE, "--name", "bad-cap");
  const line = expectOneLineError(refused, 2);
  expect(line).toContain('MCPMGR_MAX_LOG_BYTES "10MB": must be a whole number of bytes, at least 1024');
  expect(line).toContain("unset MCPMGR_MAX_LOG_BYTES");
  const names = (JSON.parse(mcpmgr({}, "list", "--format", "json").stdout) as { name: string }[]).map((r) => r.name);
  expect(names).not.toContain("bad-cap");
});

test("set badly for a later start, start refuses it in one line, with its hint", () => {
  expect(mcpmgr({}, "run", PROBE, "--name", "later-bad").code).toBe(0);
  expect(mcpmgr({}, "stop", "later-bad").code).toBe(0);
  // Refused before a supervisor starts (start-settings.test.ts), as run refuses it.
  const refused = mcpmgr({ MCPMGR_MAX_LOG_BYTES: "12" }, "start", "later-bad");
  const line = expectOneLineError(refused, 2);
  expect(line).toContain('MCPMGR_MAX_LOG_BYTES "12": must be a whole number of bytes');
  expect(line).toContain("hint: unset MCPMGR_MAX_LOG_BYTES to use the default");
  expect(mcpmgr({}, "start", "later-bad").code).toBe(0);
  expect(mcpmgr({}, "rm", "later-bad").code).toBe(0);
});

test("a background remote's audit lines are in what 'mcpmgr logs NAME' shows (a remote has no server output), its lines timed", async () => {
  const upstream = emptyResultUpstream();
  try {
    // A group of its own: the gateway tests above fence the default group (their gateway has policies).
    expect(mcpmgr({}, "group", "create", "remote-audit").code).toBe(0);
    const started = mcpmgr(
      {},
      "run",
      `http://127.0.0.1:${upstream.port}/mcp`,
      "--name",
      "remote-audit",
      "--group",
      "remote-audit",
      "--enable-audit",
    );
    expect(started.code).toBe(0);
    const answer = await fetch(started.stdout.trim(), {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(answer.status).toBe(200);
    // Audit lines are flushed every 200 ms.
    await until(() => mcpmgr({}, "logs", "remote-audit").stdout.includes('"type":"mcp_tools_list"'));
    const shown = mcpmgr({}, "logs", "remote-audit").stdout;
    // The supervisor's own lines carry their time (read long after); audit lines stay JSON, one per line.
    expect(shown).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[info\] remote-audit running at http:\/\//m);
    expect(shown).toMatch(/^\{"id":"[0-9a-f-]+","time":"[^"]+","type":"mcp_tools_list"/m);
  } finally {
    expect(mcpmgr({}, "rm", "remote-audit").code).toBe(0);
    upstream.stop(true);
  }
});

test("a background workload's telemetry export failures are in what 'mcpmgr logs NAME' shows, not only in --proxy", async () => {
  // A collector that refuses every export (a wrong path answers 404, as before).
  const collector = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("no", { status: 404 }) });
  try {
    // A group of its own: the gateway tests above fence the default group.
    expect(mcpmgr({}, "group", "create", "telemetry-log").code).toBe(0);
    const started = mcpmgr(
      {},
      "run",
      PROBE,
      "--name",
      "telemetry-log",
      "--group",
      "telemetry-log",
      "--otel-endpoint",
      `http://127.0.0.1:${collector.port}`,
      "--otel-insecure",
      "--otel-sampling-rate",
      "1",
    );
    expect(started.code).toBe(0);
    const client = new Client({ name: "workload-logs-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(started.stdout.trim())));
    await client.listTools();
    await client.close();
    await until(
      () => mcpmgr({}, "logs", "telemetry-log").stdout.includes("spans could not be sent to http://"),
      30_000,
    );
    expect(mcpmgr({}, "logs", "telemetry-log").stdout).toMatch(/^mcpmgr: telemetry: spans could not be sent to /m);
  } finally {
    expect(mcpmgr({}, "rm", "telemetry-log").code).toBe(0);
    await collector.stop(true);
  }
});
