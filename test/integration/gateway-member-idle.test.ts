/**
 * A gateway session outlives its member sessions: one kept busy with one workload while another sits
 * unused past that workload's session idle timeout (MCPMGR_SESSION_IDLE_TIMEOUT) finds its session with
 * the idle one forgotten. The call that meets it goes again on a new session: the caller never sees the
 * member's 404 (the SDK path's retry: gateway-modern-lane.test.ts, a member that restarts).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createTestGroup, PROBE_FIXTURE, type TestGroup } from "../support/gateway-group.ts";

// Real processes: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  // The member's sessions end after 2 s without requests; the gateway's own live for the default 30 min.
  process.env.MCPMGR_SESSION_IDLE_TIMEOUT = "2s";
  try {
    group = await createTestGroup();
    group.run(await group.packageOf(PROBE_FIXTURE), "idler", "idle-members");
  } finally {
    delete process.env.MCPMGR_SESSION_IDLE_TIMEOUT;
  }
  gatewayUrl = (await group.gateway("idle-members")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
});

test("a member session that idled out is opened again for the call that meets it", async () => {
  const client = new Client({ name: "idle-gateway-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(gatewayUrl)));
  try {
    const echo = async (text: string) => {
      const result = (await client.callTool({ name: "idler_echo", arguments: { text } })) as {
        isError?: boolean;
        content: { text: string }[];
      };
      expect(result.isError).toBeFalsy();
      return (JSON.parse(result.content[0]?.text ?? "{}") as { text?: string }).text;
    };
    expect(await echo("before")).toBe("before");
    // Past the member's idle timeout, twice (the point of the test is time passing without requests).
    await Bun.sleep(4_000);
    expect(await echo("after")).toBe("after");
    await Bun.sleep(4_000);
    expect(await echo("again")).toBe("again");
  } finally {
    await client.close();
  }
});
