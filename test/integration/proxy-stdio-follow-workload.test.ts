/**
 * `mcpmgr proxy stdio NAME` (Claude Desktop's entry) follows its workload: stopped, each request is
 * answered with an error that says so and how to start it; started again, and later moved to another
 * port (`rm` + `run` on another `--proxy-port`), the relay looks the workload up again (with every check
 * of its first lookup) and the same stdio client keeps working, without its AI client being restarted.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { findFreePort } from "../../src/proxy/serve.ts";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";
import { relayTransport } from "../support/stdio-relay-process.ts";

setDefaultTimeout(60_000);

let group: TestGroup;
let source: string;
let client: Client | undefined;

beforeAll(async () => {
  group = await createTestGroup();
  source = await group.packageOf(PROBE_FIXTURE);
  group.run(source, "mover", "default");
}, 120_000);

afterAll(async () => {
  await client?.close().catch(() => {});
  await group?.cleanup();
});

type ToolResult = { isError?: boolean; content: { text: string }[] };

test("a relay to a workload that was stopped, started and moved to another port keeps serving its client", async () => {
  const { transport, stderr } = relayTransport("mover", { MCPMGR_HOME: group.home, MCPMGR_RUNTIME: "process" });
  const relayed = new Client({ name: "claude-ai", version: "0.1.0" });
  client = relayed;
  await relayed.connect(transport);
  const echo = async (text: string) =>
    JSON.parse(((await relayed.callTool({ name: "echo", arguments: { text } })) as ToolResult).content[0]?.text ?? "{}")
      .text as string;
  expect(await echo("first")).toBe("first");

  // Stopped: one error per request, saying so and how to start it (the relay stays up).
  expect(group.mcpmgr("stop", "mover").code).toBe(0);
  for (let i = 0; i < 2; i++) {
    const refused = await relayed.callTool({ name: "echo", arguments: { text: "stopped" } }).then(
      () => "answered",
      (err: Error) => err.message,
    );
    expect(refused).toContain("workload mover is stopped");
    expect(refused).toContain("mcpmgr start mover");
  }
  expect(group.mcpmgr("start", "mover").code).toBe(0);
  expect(await echo("started again")).toBe("started again");

  // Moved: removed and run again on another port, as `rm` + `run --from-config` of an edited export does.
  const before = new URL(group.mcpmgr("list", "--format", "json").stdout.match(/http:\/\/[^"]+/)?.[0] ?? "http://x");
  expect(group.mcpmgr("rm", "mover").code).toBe(0);
  let port = await findFreePort();
  while (String(port) === before.port) port = await findFreePort();
  const moved = group.mcpmgr(
    "run",
    source,
    "--name",
    "mover",
    "--permission-profile",
    "none",
    "--proxy-port",
    String(port),
  );
  expect(moved.code).toBe(0);
  expect(await echo("moved")).toBe("moved");
  expect(stderr()).toContain(`relaying stdio to http://127.0.0.1:${port}/`);
});

test("a workload that moved to another port before the client's first initialize is followed there", async () => {
  group.run(source, "early", "default");
  const { transport, stderr } = relayTransport("early", { MCPMGR_HOME: group.home, MCPMGR_RUNTIME: "process" });
  // The relay runs (it looked the workload up) before the client says anything: an AI client starts its
  // servers, and its first message may come much later.
  await transport.start();
  transport.start = async () => {};
  expect(await until(() => stderr().includes("relaying stdio to"))).toBe(true);
  const before = new URL(stderr().match(/relaying stdio to (\S+)/)?.[1] ?? "http://x");
  expect(group.mcpmgr("rm", "early").code).toBe(0);
  let port = await findFreePort();
  while (String(port) === before.port) port = await findFreePort();
  const moved = group.mcpmgr(
    "run",
    source,
    "--name",
    "early",
    "--permission-profile",
    "none",
    "--proxy-port",
    String(port),
  );
  expect(moved.code).toBe(0);

  const early = new Client({ name: "claude-ai", version: "0.1.0" });
  try {
    await early.connect(transport);
    const result = (await early.callTool({ name: "echo", arguments: { text: "found" } })) as ToolResult;
    expect(JSON.parse(result.content[0]?.text ?? "{}").text).toBe("found");
    expect(stderr()).toContain(`relaying stdio to http://127.0.0.1:${port}/`);
  } finally {
    await early.close().catch(() => {});
  }
});
