/**
 * `proxy stdio NAME`'s first request after the workload's supervisor was killed (kill -9) and started again
 * (`mcpmgr start NAME`) is answered by the new supervisor, every time. The keep-alive connections the relay
 * pooled to the dead supervisor reach the same port the new one listens on, and every check passes for them;
 * when the relay had not yet seen their close, the request was written on one and failed ("the upstream closed
 * the connection before it answered"), one request in two here. Real parts: a workload (supervisor and probe
 * server) started by mcpmgr, the relay with liveWorkloadFetch over the local listener client, as
 * `proxy stdio` runs it. Only the timing is arranged: the kill and the start happen without the relay's event
 * loop running in between (an AI client's relay busy, or not scheduled, at that moment).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { PassThrough } from "node:stream";
import { startStdioRelay } from "../../src/proxy/remote-client/stdio-relay.ts";
import { localListenerClient } from "../../src/proxy/upstream/local-client.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { isSupervisorOf } from "../../src/state/supervisor-identity.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { liveWorkload, liveWorkloadFetch } from "../../src/workload/live-workload.ts";
import { currentStatus } from "../../src/workload/supervisor-control.ts";
import { createTestGroup, PROBE_FIXTURE, type TestGroup } from "../support/gateway-group.ts";
import { relayConversation } from "../support/stdio-answers.ts";

setDefaultTimeout(60_000);

let group: TestGroup;

beforeAll(async () => {
  group = await createTestGroup();
  group.run(await group.packageOf(PROBE_FIXTURE), "crashy", "default");
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
});

type Answer = { id?: unknown; result?: unknown; error?: { message: string } };

test("the first request after a killed supervisor was started again is answered, every time", async () => {
  const store = new WorkloadStore(resolvePaths({ MCPMGR_HOME: group.home }));
  const base = localListenerClient().fetch;
  const live = await liveWorkload(store, "crashy");
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const { send, answer, initialize } = relayConversation<Answer>(stdin, stdout);
  const relay = await startStdioRelay({
    target: live.url,
    fetch: liveWorkloadFetch(live, base),
    // As proxy-stdio.ts follows: the same lookup again.
    follow: async () => {
      const now = await liveWorkload(store, "crashy");
      return { target: now.url, fetch: liveWorkloadFetch(now, base) };
    },
    stdin,
    stdout,
    log: { info: () => {}, warn: () => {}, error: () => {} },
  });
  await initialize();

  // One round in two failed before: a few rounds.
  for (let round = 0; round < 4; round++) {
    const pid = (await currentStatus(store, "crashy"))?.pid ?? 0;
    process.kill(pid, "SIGKILL");
    // Waited for without running the event loop, on purpose: the relay must not see its pooled connection's
    // close before the next request (as a busy relay process would not). Bounded: a supervisor that never went
    // would otherwise hold the loop past the test's timeout.
    for (const deadline = Date.now() + 20_000; isSupervisorOf(pid, "crashy", store.paths) && Date.now() < deadline; )
      Bun.sleepSync(5);
    expect(isSupervisorOf(pid, "crashy", store.paths)).toBe(false);
    expect(group.mcpmgr("start", "crashy").code).toBe(0);
    const id = 10 + round;
    send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo", arguments: { text: `round ${round}` } } });
    const got = await answer(id);
    expect(got.error?.message).toBeUndefined();
    expect(JSON.stringify(got.result)).toContain(`round ${round}`);
  }

  stdin.end();
  expect(await relay.finished).toBe(0);
});
