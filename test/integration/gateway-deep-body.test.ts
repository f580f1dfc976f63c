/**
 * A client's body nested deeper than any MCP message, at a gateway without policies: refused at
 * the edge with -32600 as the bridge and the policy chain refuse it, not handed to the MCP SDK, which
 * overflowed its stack on it and answered that the workload had failed. Real processes: a stdio
 * workload (the probe fixture) and `mcpmgr gateway` over its group.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createTestGroup, PROBE_FIXTURE, type TestGroup } from "../support/gateway-group.ts";
import { answerMessages, openRawSession, type RawSession } from "../support/raw-session.ts";

setDefaultTimeout(60_000);

let group: TestGroup;
let gateway: Awaited<ReturnType<TestGroup["gateway"]>>;
let session: RawSession;

beforeAll(async () => {
  group = await createTestGroup();
  group.run(await group.packageOf(PROBE_FIXTURE), "deep", "default");
  gateway = await group.gateway("default");
  session = await openRawSession(gateway.url, "2025-06-18", "deep-body");
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
});

test("a tools/call nested 100,000 levels deep is refused with -32600; the workload goes on answering", async () => {
  const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
  const refused = await session.post(
    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deep_echo","arguments":{"text":"x","deep":${deep}}}}`,
  );
  expect(refused.status).toBe(400);
  expect(await refused.json()).toMatchObject({
    error: { code: -32600, message: expect.stringContaining("nested deeper") },
  });
  const body = {
    jsonrpc: "2.0",
    id: 2,
    method: "tools/call",
    params: { name: "deep_echo", arguments: { text: "still here" } },
  };
  const answer = await answerMessages(await session.post(JSON.stringify(body)));
  expect(JSON.stringify(answer.find((message) => message.id === 2))).toContain("still here");
  expect(gateway.output()).not.toContain("Maximum call stack");
});

test("a body nested exactly 256 levels deep passes, as at the bridge; one level more is refused", async () => {
  // The envelope, params and arguments are three levels: 253 more make 256.
  const call = (id: number, levels: number) =>
    session.post(
      `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"deep_echo","arguments":{"text":"deep","deep":${"[".repeat(levels)}${"]".repeat(levels)}}}}`,
    );
  const passed = await call(3, 253);
  expect(passed.status).toBe(200);
  expect(JSON.stringify(await answerMessages(passed))).not.toContain("nested deeper");
  const refused = await call(4, 254);
  expect(refused.status).toBe(400);
  expect(await refused.json()).toMatchObject({
    error: { code: -32600, message: "Invalid Request: JSON nested deeper than 256 levels" },
  });
});
