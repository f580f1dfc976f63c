/**
 * The gateway key goes only to the member's own listener (gateway/member-send.ts), even while the
 * member's supervisor lives. A workload run with `--host localhost` listens on 127.0.0.1 only, and its
 * URL says 127.0.0.1 (a connection to "localhost" may try ::1 first): another local user who listens
 * on [::1] at the member's port must not get the gateway's requests, the installation's key included.
 * Real workload and gateway; an "impostor" listens on [::1].
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Server } from "bun";
import { createTestGroup, PROBE_FIXTURE, type TestGroup } from "../support/gateway-group.ts";

setDefaultTimeout(60_000);

let group: TestGroup;

beforeAll(async () => {
  group = await createTestGroup();
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
});

const call = (client: Client, text: string) =>
  client
    .callTool({ name: "keyed_echo", arguments: { text } })
    .then((result) => JSON.stringify(result.content))
    .catch((err: unknown) => String(err));

test("a listener on another address of the member's host name never gets the gateway key; the member itself is served", async () => {
  const source = await group.packageOf(PROBE_FIXTURE);
  const started = group.mcpmgr("run", source, "--name", "keyed", "--permission-profile", "none", "--host", "localhost");
  expect(started.code).toBe(0);
  const memberUrl = new URL(started.stdout.trim());
  expect(memberUrl.hostname).toBe("127.0.0.1");

  // Nobody else listening: the member is served (its listener is the supervisor's).
  const first = await group.gateway("default", "--tools", "keyed_echo");
  const served = new Client({ name: "member-listener", version: "1.0.0" });
  await served.connect(new StreamableHTTPClientTransport(new URL(first.url)));
  expect(await call(served, "reached")).toContain("reached");
  await served.close();
  await first.stop();

  const heard: string[] = [];
  const impostor: Server<unknown> = Bun.serve({
    hostname: "::1",
    port: Number(memberUrl.port),
    fetch(req) {
      heard.push(`${req.method} ${req.headers.get("authorization")}`);
      return Response.json({ jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "impostor" }] } });
    },
  });
  try {
    const gateway = await group.gateway("default", "--tools", "keyed_echo");
    const client = new Client({ name: "member-listener", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    expect(await call(client, "meant for the member")).not.toContain("impostor");
    expect(heard.filter((line) => line.includes("mcpmgr-gateway-"))).toEqual([]);
    await client.close();
    await gateway.stop();
  } finally {
    await impostor.stop(true);
  }
});
