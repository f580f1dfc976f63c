/**
 * A call through the gateway right after `mcpmgr restart MEMBER` returned reaches the member. The gateway
 * learns a member's status from the workload store (fs.watch, debounced, and a poll): a call that found the
 * member "not running" before that read came round was answered isError for ~70 ms after the restart had
 * returned success. Such a call now reads the member's record first (membership.ts via catalog.ts).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createTestGroup, PROBE_FIXTURE, type TestGroup } from "../support/gateway-group.ts";

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
