/**
 * Many 2025-era gateway sessions whose member holds each one's standalone GET stream open
 * (src/gateway/upstream.ts): every gateway session keeps a long-lived request to the member, and
 * Bun's fetch runs at most 256 requests at once per process, so with fetch the gateway's 256th
 * session (and every other one) queued behind streams that never end. The gateway reaches its
 * members with mcpmgr's own HTTP client instead, which has no such ceiling. The sessions here use
 * short requests only (each answer read whole), so this test process is never the bottleneck.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import { createTestGroup, type TestGroup, until } from "../support/gateway-group.ts";
import { openRawSession } from "../support/raw-session.ts";

setDefaultTimeout(60_000);

let group: TestGroup;
let gateway: Awaited<ReturnType<TestGroup["gateway"]>>;
let member: MemberServer;

beforeAll(async () => {
  group = await createTestGroup();
  member = startMemberServer({ name: "docs", resources: ["test://doc"] });
  group.run(member.url, "docs", "held");
  gateway = await group.gateway("held");
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await member?.stop();
});

/** One session: opened, then one resource read; its answer, or "no answer" after 10 s. */
async function readInNewSession(index: number): Promise<string> {
  const session = await openRawSession(gateway.url, "2025-06-18", `client-${index}`);
  await (await session.post(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }))).text();
  const read = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "resources/read", params: { uri: "test://doc" } });
  const answer = await session.post(read, { signal: AbortSignal.timeout(10_000) }).then(
    (response) => response.text(),
    () => "no answer",
  );
  return answer;
}

test("300 sessions, each holding a GET stream at its member, are all answered", async () => {
  const sessions = 300;
  const answers: string[] = [];
  for (let next = 0; next < sessions; next += 20) {
    const batch = Array.from({ length: Math.min(20, sessions - next) }, (_, i) => readInNewSession(next + i));
    answers.push(...(await Promise.all(batch)));
    if (answers.some((answer) => !answer.includes("docs says: contents of test://doc"))) break;
  }
  const unanswered = answers.findIndex((answer) => !answer.includes("docs says: contents of test://doc"));
  expect({ unanswered, answer: answers[unanswered] }).toEqual({ unanswered: -1, answer: undefined });
  expect(answers).toHaveLength(sessions);
  // The streams are really held: one per session (and the gateway's own catalog connection).
  expect(await until(() => member.openStreams >= sessions)).toBe(true);
});
