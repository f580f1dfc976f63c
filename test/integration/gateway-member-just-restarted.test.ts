/**
 * A call through the gateway right after `mcpmgr restart MEMBER` returned reaches the member. The gateway
 * learns a member's status from the workload store (fs.watch, debounced, and a poll): a call that found the
 * member "not running" before that read came round was answered isError for ~70 ms after the restart had
 * returned success. Such a call now reads the member's record first (membership.ts via catalog.ts). A resource
 * read, whose URI names no member, reads the records of the members that are gone before it says the URI is
 * unknown.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";

setDefaultTimeout(60_000);

let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  group = await createTestGroup();
  group.run(await group.packageOf(PROBE_FIXTURE), "every3", "restarts");
  gatewayUrl = (await group.gateway("restarts")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
});

test("a call right after a member's restart returned is answered by the member", async () => {
  const client = new Client({ name: "just-restarted-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(gatewayUrl)));
  try {
    const echo = async (text: string) =>
      (await client.callTool({ name: "every3_echo", arguments: { text } })) as {
        isError?: boolean;
        content: { text: string }[];
      };
    expect((await echo("before")).isError).toBeFalsy();
    for (let round = 0; round < 3; round++) {
      const restarted = group.mcpmgr("restart", "every3");
      expect(restarted.code).toBe(0);
      const result = await echo(`after ${round}`);
      expect(result.content[0]?.text ?? "").not.toContain("not running");
      expect(result.isError).toBeFalsy();
    }
  } finally {
    await client.close();
  }
});

test("a resource read right after a member's restart returned is answered by the member", async () => {
  const client = new Client({ name: "just-restarted-resources-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(gatewayUrl)));
  try {
    const read = () =>
      client.readResource({ uri: "probe://r1" }).then(
        (result) => JSON.stringify(result),
        (err: Error) => `failed: ${err.message}`,
      );
    expect(await read()).toContain("contents of probe://r1");
    for (let round = 0; round < 3; round++) {
      expect(group.mcpmgr("restart", "every3").code).toBe(0);
      expect(await read()).toContain("contents of probe://r1");
    }
  } finally {
    await client.close();
  }
});

test("calls pouring in for a stopped member are each answered at once, not held while the re-reads go on", async () => {
  // Many stopped workloads in the group: each read of the membership takes a while, as in a big home.
  const { mkdir, readFile, writeFile } = await import("node:fs/promises");
  const { join } = await import("node:path");
  const workloads = join(group.home, "state", "workloads");
  const own = JSON.parse(await readFile(join(workloads, "every3", "workload.json"), "utf8")) as Record<string, unknown>;
  for (let i = 0; i < 400; i++) {
    await mkdir(join(workloads, `idle${i}`), { recursive: true });
    await writeFile(join(workloads, `idle${i}`, "workload.json"), JSON.stringify({ ...own, name: `idle${i}` }));
  }
  const client = new Client({ name: "stopped-member-load-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(gatewayUrl)));
  try {
    expect(group.mcpmgr("stop", "every3").code).toBe(0);
    const echo = () => client.callTool({ name: "every3_echo", arguments: { text: "x" } });
    // The gateway holds the member as gone once a call says so.
    expect(await until(async () => JSON.stringify(await echo()).includes("not running"))).toBe(true);
    // Each such call reads the store again; a call arriving during a read asked for one more after it, so a
    // steady stream of calls kept the reads going, and every caller waiting, for as long as it lasted.
    const answers: Promise<{ ms: number; text: string }>[] = [];
    const until2500 = performance.now() + 2_500;
    while (performance.now() < until2500) {
      const sent = performance.now();
      answers.push(
        echo().then(
          (r) => ({ ms: performance.now() - sent, text: JSON.stringify(r) }),
          (err: unknown) => ({ ms: performance.now() - sent, text: String(err) }),
        ),
      );
      await Bun.sleep(2);
    }
    const answered = await Promise.all(answers);
    expect(answered.filter((a) => !a.text.includes("not running"))).toEqual([]);
    expect(Math.max(...answered.map((a) => a.ms))).toBeLessThan(1_000);
  } finally {
    await client.close();
    group.mcpmgr("start", "every3");
  }
});
