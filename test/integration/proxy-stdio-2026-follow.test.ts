/**
 * `mcpmgr proxy stdio NAME` with a 2026-07-28 client (stateless requests, no session): a workload that moved
 * to another port is looked up again when a request meets its old endpoint, and that request, refused before
 * it was sent, goes to where the workload serves now, once; while it is stopped the request gets why and how to
 * start it. (A request that may have reached the workload is never sent again: proxy-stdio-answer-lost.test.ts
 * for the rule, relay-failures.ts answerLost.) Real parts: the TypeScript SDK v2 client, the relay as an AI
 * client starts it, a supervisor started by mcpmgr in front of a server that speaks only 2026-07-28.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { findFreePort } from "../../src/proxy/serve.ts";
import { type ModernServer, startModernServer } from "../fixtures/modern-server.ts";
import { createTestGroup, type TestGroup } from "../support/gateway-group.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

/** Probes the version on the real process (the SDK's base class would spawn a throw-away sibling). */
class ProxyStdio extends StdioClientTransport {}

let modern: ModernServer;
let group: TestGroup;
let client: Client | undefined;

beforeAll(async () => {
  modern = startModernServer();
  group = await createTestGroup();
  group.run(modern.url, "modern", "default");
}, 120_000);

afterAll(async () => {
  await client?.close().catch(() => {});
  await group?.cleanup();
  modern?.stop();
});

test("a stateless request that meets a moved workload is sent once, where it serves now", async () => {
  const relayed = new Client({ name: "claude-ai", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  client = relayed;
  await relayed.connect(
    new ProxyStdio({
      command: process.execPath,
      args: [CLI_ENTRY, "proxy", "stdio", "modern"],
      cwd: REPO_ROOT,
      env: { ...(process.env as Record<string, string>), NO_COLOR: "1", MCPMGR_HOME: group.home },
      stderr: "ignore",
    }),
  );
  expect(relayed.getProtocolEra()).toBe("modern");
  const where = (region: string) =>
    relayed.callTool({ name: "where", arguments: { region } }).then(
      (result) => JSON.stringify(result.content),
      (err: Error) => `failed: ${err.message}`,
    );
  expect(await where("first")).toContain("in first");

  // Stopped: said, with the way out.
  expect(group.mcpmgr("stop", "modern").code).toBe(0);
  const stopped = await where("stopped");
  expect(stopped).toContain("workload modern is stopped");
  expect(stopped).toContain("mcpmgr start modern");

  // Moved: removed and run again on another port.
  const before = new URL(JSON.parse(group.mcpmgr("list", "--format", "json").stdout)[0].url as string);
  expect(group.mcpmgr("rm", "modern").code).toBe(0);
  let port = await findFreePort();
  while (String(port) === before.port) port = await findFreePort();
  expect(group.mcpmgr("run", modern.url, "--name", "modern", "--proxy-port", String(port)).code).toBe(0);
  modern.seen.length = 0;
  expect(await where("moved")).toContain("in moved");
  expect(modern.seen.filter((r) => r.mcpMethod === "tools/call" && r.region === "moved")).toHaveLength(1);
});
