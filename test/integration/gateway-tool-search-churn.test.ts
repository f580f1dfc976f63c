/**
 * Search mode against a workload whose list is large or never stops changing (security.md G4): real
 * stdio workloads started by `mcpmgr run` (the churning fixture and the bridge probe), `mcpmgr gateway
 * --tool-search`, the SDK client through it. The index of one workload must not hold up the others'
 * (their tools indexed, their callers answered in time).
 */
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { REPO_ROOT } from "../support/processes.ts";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";

setDefaultTimeout(120_000);

const CHURNING_FIXTURE = join(REPO_ROOT, "test/fixtures/churning-member.ts");

let group: TestGroup;
let client: Client | undefined;

beforeEach(async () => {
  group = await createTestGroup();
});

afterEach(async () => {
  await client?.close().catch(() => {});
  client = undefined;
  await group?.cleanup();
});

async function connect(url: string): Promise<Client> {
  client = new Client({ name: "churn-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

function text(result: unknown): string {
  return ((result as { content: { text: string }[] }).content[0] as { text: string }).text;
}

test("a tool described in 12 MiB of words does not keep the other workloads' tools out of the index", async () => {
  // `aaa` sorts before `probe`: the index takes the workloads in name order.
  group.run(await group.packageOf(CHURNING_FIXTURE), "aaa", "default", "1", String(12 * 1024 * 1024));
  group.run(await group.packageOf(PROBE_FIXTURE), "probe", "default");
  const gateway = await group.gateway("default", "--tool-search");
  const c = await connect(gateway.url);
  const found = async () =>
    text(await c.callTool({ name: "find_tool", arguments: { query: "echo the text back", limit: 5 } }));
  expect(await until(async () => (await found()).includes("probe_echo"), 10_000)).toBe(true);
  // The large tool is indexed too, by the start of its description.
  expect(text(await c.callTool({ name: "find_tool", arguments: { query: "alpha0 bravo1 charlie2" } }))).toContain(
    "aaa_t0",
  );
  expect(gateway.output()).not.toContain("Maximum call stack size exceeded");
});

test("a workload changing a 14 MiB list without pause leaves the gateway answering its other callers", async () => {
  group.run(await group.packageOf(PROBE_FIXTURE), "probe", "default");
  group.run(await group.packageOf(CHURNING_FIXTURE), "storm", "default", "9000", "1600", "churn");
  const gateway = await group.gateway("default", "--tool-search");
  const c = await connect(gateway.url);
  // Churning: the gateway has listed it again at least twice since it joined.
  expect(
    await until(async () => {
      const listed = Number(/listed (\d+)/.exec(text(await c.callTool({ name: "storm_t0", arguments: {} })))?.[1]);
      return listed >= 3;
    }, 60_000),
  ).toBe(true);
  const started = performance.now();
  for (let i = 0; i < 20; i++) {
    const answer = text(await c.callTool({ name: "find_tool", arguments: { query: "echo the text back" } }));
    expect(answer).toContain("probe_echo");
  }
  // About 0.1 s in all, and 0.3 s at worst for one, with each change re-indexed at most once a second;
  // tokenised on every change, the median call took 0.8 s and one up to 18 s.
  expect(performance.now() - started).toBeLessThan(8_000);
});
