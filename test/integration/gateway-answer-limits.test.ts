/**
 * The gateway holds no answer from a member larger than MCPMGR_MAX_MESSAGE_BYTES (review 9 F1): a
 * JSON answer (chunked, or with a Content-Length) or an SSE event past it fails the call with -32603
 * naming the limit, on the fast lane and the SDK path alike, and is logged once; a member's
 * tools/list page past it is refused before it is parsed. Real processes: a hostile member
 * (test/support/hostile-member.ts) run as a remote workload, and `mcpmgr gateway` over its group
 * with a 1 MiB limit; the answers are 3 MiB. A member failing every retry with a large HTTP error
 * page gets one short line in the log, not the page at every retry (review 9 F2). A client that stops
 * reading its call's stream is dropped with one line in the log, no stack trace (F15). A member that
 * resumes the call's stream into streams that end at once (`retry: 0`) is asked again a few times, not
 * hundreds of times a second (F3).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createTestGroup, type TestGroup, until } from "../support/gateway-group.ts";
import { type HostileMember, startHostileMember } from "../support/hostile-member.ts";
import { answerMessages, openRawSession, type RawSession } from "../support/raw-session.ts";
import { howStreamEnds } from "../support/stream-end.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

const LIMIT = 1024 * 1024;
const LIMIT_ENV = { MCPMGR_MAX_MESSAGE_BYTES: String(LIMIT) };

let group: TestGroup;
let member: HostileMember;
let bigList: HostileMember;
let errorPage: HostileMember;
let gateway: Awaited<ReturnType<TestGroup["gateway"]>>;
let session: RawSession;

beforeAll(async () => {
  group = await createTestGroup();
  member = startHostileMember();
  bigList = startHostileMember({ list: "hugepage", listKib: 3072 });
  errorPage = startHostileMember({ list: "errbody", listKib: 512 });
  group.run(member.url, "hm", "hostile");
  group.run(bigList.url, "hl", "biglist");
  group.run(errorPage.url, "he", "errorpage");
  gateway = await group.gatewayWithEnv(LIMIT_ENV, "hostile");
  session = await openRawSession(gateway.url, "2025-11-25", "limits");
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  member?.stop();
  bigList?.stop();
  errorPage?.stop();
});

async function call(id: number, name: string, kib: number, extra: object = {}) {
  const body = { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: { kib }, ...extra } };
  const answer = await answerMessages(await session.post(JSON.stringify(body)));
  return answer.find((message) => message.id === id) as { error?: { code: number; message: string } } | undefined;
}

const oversizedLines = () => gateway.output().match(/workload 'hm': the MCP server's answer \(over \d+ bytes\)/g) ?? [];

test.each([
  ["a chunked JSON answer", "hm_hugejson"],
  ["a JSON answer with its Content-Length", "hm_declaredjson"],
  ["an SSE event that never ends", "hm_giant"],
])("%s past the limit fails the fast lane's call with -32603 naming the limit, logged once", async (_what, tool) => {
  const before = oversizedLines().length;
  const answer = await call(10, tool, 3072);
  expect(answer?.error?.code).toBe(-32603);
  expect(answer?.error?.message).toContain("larger than mcpmgr accepts");
  expect(answer?.error?.message).toContain("MCPMGR_MAX_MESSAGE_BYTES");
  expect(await until(() => oversizedLines().length === before + 1)).toBe(true);
  // The gateway goes on serving the session.
  const next = await call(11, "hm_ok", 0);
  expect(next).toMatchObject({ result: { content: [{ type: "text", text: "fine" }] } });
});

test("an answer under the limit still arrives whole, as JSON and as an event", async () => {
  const json = (await call(20, "hm_hugejson", 512)) as { result?: { content: { text: string }[] } };
  expect(json.result?.content[0]?.text).toHaveLength(512 * 1024);
  const event = (await call(21, "hm_bigevent", 512)) as { result?: { content: { text: string }[] } };
  expect(event.result?.content[0]?.text).toHaveLength(512 * 1024);
});

test("the SDK path (a call the fast lane leaves to the SDK) is bounded too", async () => {
  // A param beyond name/arguments/_meta: the lane hands the call to the SDK's handler.
  const before = oversizedLines().length;
  const answer = await call(30, "hm_hugejson", 3072, { extra: true });
  expect(answer?.error?.code).toBe(-32603);
  expect(answer?.error?.message).toContain("MCPMGR_MAX_MESSAGE_BYTES");
  expect(await until(() => oversizedLines().length === before + 1)).toBe(true);
  const event = await call(31, "hm_giant", 3072, { extra: true });
  expect(event?.error?.code).toBe(-32603);
  expect(event?.error?.message).toContain("MCPMGR_MAX_MESSAGE_BYTES");
});

test("a member's tools/list page past the limit is refused before it is parsed, saying which limit", async () => {
  const other = await group.gatewayWithEnv(LIMIT_ENV, "biglist");
  try {
    expect(
      await until(() => /workload 'hl' .*larger than mcpmgr accepts.*MCPMGR_MAX_MESSAGE_BYTES/.test(other.output())),
    ).toBe(true);
  } finally {
    await other.stop();
  }
});

test("a member failing every retry with a large error page is logged as one short line, not once per retry", async () => {
  const other = await group.gatewayWithEnv(LIMIT_ENV, "errorpage");
  try {
    // The catalog retries every 2 s: wait for three answers of the member's 512 KiB error page.
    const listed = errorPage.counts.list;
    expect(await until(() => errorPage.counts.list >= listed + 3, 30_000)).toBe(true);
    const lines = other
      .output()
      .split("\n")
      .filter((line) => line.includes("workload 'he'"));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("HTTP 500");
    expect(lines[0]?.length).toBeLessThan(400);
    expect(other.output().length).toBeLessThan(10_000);
  } finally {
    await other.stop();
  }
});

test("a client that stops reading its call's stream is dropped with one line in the log, no stack trace", async () => {
  // 40 MiB of log messages for the call: more than the 16 MiB a stream holds for its client, and the sockets.
  const body = {
    jsonrpc: "2.0",
    id: 40,
    method: "tools/call",
    params: { name: "hm_flood", arguments: { kib: 40_960 } },
  };
  const response = await session.post(JSON.stringify(body));
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  expect(await until(() => gateway.output().includes("a client's event stream was dropped"), 30_000)).toBe(true);
  const rest = await howStreamEnds(reader);
  expect(rest).toBe("reset");
  expect(
    gateway.output().match(/a client's event stream was dropped: it did not read 16 MiB of messages/g),
  ).toHaveLength(1);
  expect(gateway.output()).not.toContain("event-stream.ts");
  expect(gateway.output()).not.toMatch(/^\s+at /m);
  expect(await call(41, "hm_ok", 0)).toMatchObject({ result: { content: [{ type: "text", text: "fine" }] } });
});

test("a member resuming into streams that end at once with retry 0 is asked a few times, not in a tight loop", async () => {
  const before = member.counts.get;
  const body = { jsonrpc: "2.0", id: 50, method: "tools/call", params: { name: "hm_loop", arguments: {} } };
  const controller = new AbortController();
  const response = await session.post(JSON.stringify(body), { signal: controller.signal });
  const reading = response.text().catch(() => "");
  await Bun.sleep(3_000);
  controller.abort();
  await reading;
  const asked = member.counts.get - before;
  // Waits of 100, 200, 400, 800, 1600 ms: five resumptions in 3 s (it was hundreds a second).
  expect(asked).toBeGreaterThanOrEqual(2);
  expect(asked).toBeLessThanOrEqual(8);
  // The client left: no more resumptions.
  await Bun.sleep(500);
  const settled = member.counts.get;
  await Bun.sleep(2_000);
  expect(member.counts.get).toBe(settled);
});
