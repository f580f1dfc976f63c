/**
 * `proxy stdio NAME`'s relay never sends a request twice: a request whose answer's headers came from a
 * workload whose supervisor was gone by then (killed at that instant) may have been carried out, so it is
 * answered as lost (WORKLOAD_ENDED_DURING_REQUEST), not sent again in a new session once the workload
 * serves again; the next message still follows the workload. Real parts: a workload (supervisor and
 * probe server) started by mcpmgr, the relay with liveWorkloadFetch over the local listener client, and
 * the same lookup `proxy stdio` follows with. Only the timing is arranged: the supervisor is SIGKILLed
 * as the answer arrives (before the relay's second check), and the workload is started again just as
 * the relay looks it up again. The same for a 2026-07-28 client's stateless request (no session): the relay
 * looks the workload up again, and only what comes next goes there.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { PassThrough } from "node:stream";
import type { UpstreamFetch } from "../../src/proxy/authenticated-fetch.ts";
import { startStdioRelay } from "../../src/proxy/remote-client/stdio-relay.ts";
import { localListenerClient } from "../../src/proxy/upstream/local-client.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { isSupervisorOf } from "../../src/state/supervisor-identity.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { liveWorkload, liveWorkloadFetch } from "../../src/workload/live-workload.ts";
import { currentStatus } from "../../src/workload/supervisor-control.ts";
import { type ModernServer, startModernServer } from "../fixtures/modern-server.ts";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";
import { relayConversation } from "../support/stdio-answers.ts";

setDefaultTimeout(60_000);

let group: TestGroup;
let modern: ModernServer;

beforeAll(async () => {
  group = await createTestGroup();
  group.run(await group.packageOf(PROBE_FIXTURE), "twice", "default");
  modern = startModernServer();
  group.run(modern.url, "stateless", "default");
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  modern?.stop();
});

type Answer = { id?: unknown; result?: unknown; error?: { message: string } };

test("a tool call answered as the workload's supervisor died is answered as lost, never sent again", async () => {
  const store = new WorkloadStore(resolvePaths({ MCPMGR_HOME: group.home }));
  const base = localListenerClient().fetch;
  /** How often each request id was sent to a workload, whatever the session. */
  const sent = new Map<unknown, number>();
  let killAt: unknown;
  const counting: UpstreamFetch = async (url, init) => {
    const body = typeof init.body === "string" ? (JSON.parse(init.body) as { id?: unknown; method?: unknown }) : {};
    if (body.method === "tools/call") sent.set(body.id, (sent.get(body.id) ?? 0) + 1);
    const response = await base(url, init);
    if (body.method === "tools/call" && body.id === killAt) {
      killAt = undefined;
      // The answer's headers are here: its supervisor dies now, before the relay checks it again.
      const pid = (await currentStatus(store, "twice"))?.pid ?? 0;
      process.kill(pid, "SIGKILL");
      expect(await until(() => !isSupervisorOf(pid, "twice", store.paths))).toBe(true);
    }
    return response;
  };
  let restarted = false;
  const live = await liveWorkload(store, "twice");
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const { send, answer, initialize } = relayConversation<Answer>(stdin, stdout);
  const logged: string[] = [];
  const relay = await startStdioRelay({
    target: live.url,
    fetch: liveWorkloadFetch(live, counting),
    follow: async () => {
      // The workload serves again by the time the relay looks it up (started again at that moment).
      if (!restarted) {
        restarted = true;
        expect(group.mcpmgr("start", "twice").code).toBe(0);
        // Answering already (a first request to a just-started workload may meet a closed connection).
        const answers = async () => {
          const now = await liveWorkload(store, "twice");
          const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
          const body = JSON.stringify({ jsonrpc: "2.0", id: "probe", method: "ping" });
          return liveWorkloadFetch(now, base)(now.url.href, { method: "POST", headers, body })
            .then(async (response) => (await response.body?.cancel(), true))
            .catch(() => false);
        };
        expect(await until(answers)).toBe(true);
      }
      const now = await liveWorkload(store, "twice");
      return { target: now.url, fetch: liveWorkloadFetch(now, counting) };
    },
    stdin,
    stdout,
    log: { info: (t) => logged.push(t), warn: (t) => logged.push(t), error: (t) => logged.push(t) },
  });
  const call = (id: number, text: string) =>
    send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo", arguments: { text } } });

  await initialize();

  killAt = 2;
  call(2, "once");
  const lost = await answer(2);
  // Sent once: the workload may have carried it out.
  expect(sent.get(2)).toBe(1);
  expect(lost.result).toBeUndefined();
  expect(lost.error?.message).toContain("its answer is lost");

  // What comes next follows the workload to where it serves again.
  call(3, "after");
  const after = await answer(3);
  expect(after.error).toBeUndefined();
  expect(JSON.stringify(after.result)).toContain("after");
  expect(sent.get(2)).toBe(1);
  expect(restarted).toBe(true);

  stdin.end();
  expect(await relay.finished).toBe(0);
});

test("a 2026-07-28 stateless tool call answered as the workload's supervisor died is answered as lost, never sent again", async () => {
  const store = new WorkloadStore(resolvePaths({ MCPMGR_HOME: group.home }));
  const base = localListenerClient().fetch;
  let killAt: unknown;
  const killing: UpstreamFetch = async (url, init) => {
    const body = typeof init.body === "string" ? (JSON.parse(init.body) as { id?: unknown }) : {};
    const response = await base(url, init);
    if (body.id !== undefined && body.id === killAt) {
      killAt = undefined;
      const pid = (await currentStatus(store, "stateless"))?.pid ?? 0;
      process.kill(pid, "SIGKILL");
      expect(await until(() => !isSupervisorOf(pid, "stateless", store.paths))).toBe(true);
    }
    return response;
  };
  let restarted = false;
  const live = await liveWorkload(store, "stateless");
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const { answer } = relayConversation<Answer>(stdin, stdout);
  const relay = await startStdioRelay({
    target: live.url,
    fetch: liveWorkloadFetch(live, killing),
    follow: async () => {
      // Started again just as the relay looks it up again.
      if (!restarted) {
        restarted = true;
        expect(group.mcpmgr("start", "stateless").code).toBe(0);
      }
      const now = await liveWorkload(store, "stateless");
      return { target: now.url, fetch: liveWorkloadFetch(now, killing) };
    },
    stdin,
    stdout,
    log: { info: () => {}, warn: () => {}, error: () => {} },
  });
  const meta = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "claude-ai", version: "1" },
    "io.modelcontextprotocol/clientCapabilities": {},
  };
  const call = (id: number, region: string) =>
    stdin.write(
      `${JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "where", arguments: { region }, _meta: meta } })}\n`,
    );
  const calls = (region: string) => modern.seen.filter((r) => r.mcpMethod === "tools/call" && r.region === region);

  call(1, "warm");
  expect(JSON.stringify((await answer(1)).result)).toContain("in warm");
  killAt = 2;
  call(2, "once");
  const lost = await answer(2);
  expect(lost.result).toBeUndefined();
  expect(lost.error?.message).toContain("the request was sent");
  // Sent once: the workload may have carried it out. The relay looked the workload up again meanwhile.
  expect(calls("once")).toHaveLength(1);
  expect(restarted).toBe(true);

  call(3, "after");
  expect(JSON.stringify((await answer(3)).result)).toContain("in after");
  expect(calls("once")).toHaveLength(1);

  stdin.end();
  expect(await relay.finished).toBe(0);
});
