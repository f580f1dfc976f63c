/**
 * The end of a gateway session reaches its members (src/gateway/front-end.ts, upstream-pool.ts):
 * a client's DELETE ends the gateway's session with each member (HTTP DELETE), its calls in flight
 * are cancelled at the member on both paths (the SDK's and the relayed fast lane), a member that
 * does not allow DELETE (405) is no failure, and a member that never answers the DELETE does not
 * hold the client's answer past the gateway's bound. Members are SDK servers (test/fixtures/
 * member-server.ts) that record the DELETEs and cancellations they get, run as remote workloads.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import { createTestGroup, type TestGroup, until } from "../support/gateway-group.ts";
import { openRawSession, type RawSession } from "../support/raw-session.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let group: TestGroup;
let gateway: Awaited<ReturnType<TestGroup["gateway"]>>;
let ends: MemberServer;
let refuses: MemberServer;
let hangs: MemberServer;

beforeAll(async () => {
  group = await createTestGroup();
  ends = startMemberServer({ name: "ends", tools: ["echo", "slow"] });
  refuses = startMemberServer({ name: "refuses", tools: ["echo", "slow"], onDelete: "refuse" });
  hangs = startMemberServer({ name: "hangs", tools: ["echo"], onDelete: "hang" });
  group.run(ends.url, "ends", "closing");
  group.run(refuses.url, "refuses", "closing");
  group.run(hangs.url, "hangs", "closing");
  gateway = await group.gateway("closing");
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await Promise.allSettled([ends?.stop(), refuses?.stop(), hangs?.stop()]);
});

const call = (id: string, name: string, params: Record<string, unknown> = {}) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: {}, ...params } });

/** A session that has reached the named members (each answered an echo in it). */
async function sessionWith(...members: string[]): Promise<RawSession> {
  const session = await openRawSession(gateway.url, "2025-06-18", "ending");
  for (const member of members) {
    const answer = await (await session.post(call(`"${member}"`, `${member}_echo`))).text();
    expect(answer).toContain(`${member} ran echo`);
  }
  return session;
}

const deleteSession = (session: RawSession) =>
  fetch(gateway.url, {
    method: "DELETE",
    headers: { "mcp-session-id": session.sessionId, "mcp-protocol-version": "2025-06-18" },
  });

test("a client's DELETE ends the gateway's session with each member", async () => {
  const before = ends.deletes.length;
  const session = await sessionWith("ends");
  expect(ends.sessionCount).toBeGreaterThan(0);
  const open = ends.sessionCount;
  const answer = await deleteSession(session);
  expect(answer.status).toBe(200);
  // Answered once the member sessions ended: the DELETE is already there.
  expect(ends.deletes.length).toBe(before + 1);
  expect(ends.sessionCount).toBe(open - 1);
  // The session is gone at the gateway too.
  expect((await session.post(call('"after"', "ends_echo"))).status).toBe(404);
});

test("a member that answers the DELETE with 405 is no failure: the client's DELETE succeeds", async () => {
  const before = refuses.deletes.length;
  const session = await sessionWith("refuses", "ends");
  const answer = await deleteSession(session);
  expect(answer.status).toBe(200);
  expect(refuses.deletes.length).toBe(before + 1);
});

test("a member that never answers the DELETE does not hold the client's answer past the bound", async () => {
  const before = hangs.deletes.length;
  const session = await sessionWith("hangs", "ends");
  const started = performance.now();
  const answer = await deleteSession(session);
  const elapsed = performance.now() - started;
  expect(answer.status).toBe(200);
  expect(hangs.deletes.length).toBe(before + 1);
  // The bound is 2 s (MEMBER_SESSION_END_MS); the margin is for a loaded machine.
  expect(elapsed).toBeLessThan(5_000);
});

for (const path of ["relayed", "SDK"] as const) {
  test(`a call in flight when the client DELETEs its session is cancelled at the member (${path} path)`, async () => {
    // A member that refuses DELETE: what it hears of the call is the cancellation, not its session closing.
    const session = await sessionWith("refuses");
    const started = refuses.slowCalls;
    const cancelled = refuses.cancellations.length;
    // The relayed lane takes a plain tools/call; params it does not know leave the call to the SDK.
    const params = path === "SDK" ? { extra: true } : {};
    const pending = session.post(call('"slow"', "refuses_slow", params)).then((r) => r.text());
    expect(await until(() => refuses.slowCalls === started + 1)).toBe(true);
    expect((await deleteSession(session)).status).toBe(200);
    expect(await until(() => refuses.cancellations.length === cancelled + 1)).toBe(true);
    // The call's POST ends without the member's answer.
    expect(await pending).not.toContain("refuses slept");
  });
}

test("a session that expires without requests ends its member sessions; one with a call in flight is not idle", async () => {
  const quick = await group.gatewayWithEnv({ MCPMGR_SESSION_IDLE_TIMEOUT: "1s" }, "closing");
  const idle = await openRawSession(quick.url, "2025-06-18", "idle");
  const waiting = await openRawSession(quick.url, "2025-06-18", "waiting");
  const deletes = ends.deletes.length;
  const started = refuses.slowCalls;
  const cancelled = refuses.cancellations.length;
  expect(await (await idle.post(call('"e"', "ends_echo"))).text()).toContain("ends ran echo");
  const abort = new AbortController();
  const pending = waiting
    .post(call('"slow"', "refuses_slow"), { signal: abort.signal })
    .then((r) => r.text())
    .catch(() => "aborted");
  expect(await until(() => refuses.slowCalls === started + 1)).toBe(true);
  // The idle session's end (its member session DELETEd) shows the sweep has passed both sessions' cutoff.
  expect(await until(() => ends.deletes.length === deletes + 1)).toBe(true);
  expect((await idle.post(call('"e2"', "ends_echo"))).status).toBe(404);
  // The session waiting on its call was not taken for idle: the call runs on, the session answers.
  expect(refuses.cancellations.length).toBe(cancelled);
  const again = await waiting.post(call('"e3"', "ends_echo"));
  expect(again.status).toBe(200);
  expect(await again.text()).toContain("ends ran echo");
  abort.abort();
  expect(await pending).toBe("aborted");
});

test("a gateway that stops ends its own catalog sessions with its members (DELETE), within the bound", async () => {
  // Members of a group of their own: no other gateway's sessions come and go at them meanwhile.
  const alone = startMemberServer({ name: "alone", tools: ["echo"] });
  const stuck = startMemberServer({ name: "stuck", tools: ["echo"], onDelete: "hang" });
  try {
    group.run(alone.url, "alone", "stopping");
    group.run(stuck.url, "stuck", "stopping");
    const stopping = await group.gateway("stopping");
    // Ready once it has listed every member: its catalog session with each is open, and no other.
    expect(alone.sessionCount).toBe(1);
    expect(stuck.sessionCount).toBe(1);
    const started = performance.now();
    expect(await stopping.stop()).toBe(0);
    const elapsed = performance.now() - started;
    // Each member got the DELETE of that session; one that ends sessions no longer holds it.
    expect(await until(() => alone.deletes.length === 1)).toBe(true);
    expect(alone.sessionCount).toBe(0);
    expect(stuck.deletes).toHaveLength(1);
    // The member that never answers its DELETE holds the stop for the bound (2 s), not longer.
    expect(elapsed).toBeLessThan(8_000);
  } finally {
    await Promise.allSettled([alone.stop(), stuck.stop()]);
  }
});
