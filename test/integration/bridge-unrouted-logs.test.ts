/**
 * A stdio server's log message that the bridge cannot attribute to one caller (several callers
 * waiting on the server, none of which asked for logging) goes to the workload's log, not to a
 * caller that might not be its owner, and is not lost (stdio-bridge/server-routing.ts). The
 * server is the bridge probe (test/fixtures/bridge-probe-server.ts) run as a background
 * workload; its `log_later` logs a line after a delay, unrelated to any request, while two
 * callers' `sleep` calls are in flight.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";
import { openRawSession } from "../support/raw-session.ts";
import { statelessHeaders, statelessMeta } from "../support/stateless-request.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let group: TestGroup;
let url: string;

beforeAll(async () => {
  group = await createTestGroup();
  url = group.run(await group.packageOf(PROBE_FIXTURE), "logger", "default");
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
});

const call = (id: number, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
  });

/** The probe's counters, asked in a session of its own. */
async function sleeping(): Promise<number> {
  const session = await openRawSession(url, "2025-06-18", "stats");
  const text = await (await session.post(call(1, "stats", {}))).text();
  const data = /"sleeping\\?":(\d+)/.exec(text);
  return Number(data?.[1] ?? -1);
}

const workloadLog = () => group.mcpmgr("logs", "logger").stdout;

/** Two calls in flight (one from each of `starts`), then a log line unrelated to any request; returns what the callers got. */
async function logWhileTwoWait(tag: string, starts: readonly (() => Promise<Response>)[]): Promise<string[]> {
  const before = await sleeping();
  const waiting = starts.map((start) => start().then((r) => r.text()));
  expect(await until(async () => (await sleeping()) === before + 2)).toBe(true);
  const other = await openRawSession(url, "2025-06-18", "trigger");
  expect(await (await other.post(call(2, "log_later", { tag, delayMs: 100 }))).text()).toContain("scheduled");
  expect(await until(() => workloadLog().includes(`[mcp log error] probe: ${tag}`))).toBe(true);
  return Promise.all(waiting);
}

test("sessions: a log line while two wait, none having asked for logging, is in the workload log and with neither", async () => {
  const sessions = [
    await openRawSession(url, "2025-06-18", "caller-a"),
    await openRawSession(url, "2025-06-18", "caller-b"),
  ];
  const got = await logWhileTwoWait(
    "unrouted-between-sessions",
    sessions.map((session) => () => session.post(call(10, "sleep", { ms: 2_000 }))),
  );
  for (const answer of got) {
    expect(answer).toContain("slept");
    expect(answer).not.toContain("unrouted-between-sessions");
  }
});

test("2026-07-28 requests: a log line while two wait is in the workload log and with neither, even when they asked for logs", async () => {
  const meta = { ...statelessMeta({}, { name: "modern", version: "1" }), "io.modelcontextprotocol/logLevel": "debug" };
  const start = () =>
    fetch(url, {
      method: "POST",
      headers: statelessHeaders("tools/call", "sleep"),
      body: call(20, "sleep", { ms: 2_000 }, meta),
    });
  const got = await logWhileTwoWait("unrouted-between-requests", [start, start]);
  for (const answer of got) {
    expect(answer).toContain("slept");
    expect(answer).not.toContain("unrouted-between-requests");
  }
});
