/**
 * `mcpmgr proxy stdio` (Claude Desktop's entry) across a restart of what it relays to: the remote
 * forgets the session (404), and the relay opens a new one with the client's own initialize, so the
 * stdio client, which has no way to start over short of being restarted, keeps working.
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { eventually } from "../support/raw-http.ts";
import { startConformanceServer } from "../support/conformance.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

const stops: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => {});
});

test("a remote that restarts (its sessions forgotten) is given a new session: the stdio client's next call works", async () => {
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-relay-renewal-"));
  stops.push(() => rm(home, { recursive: true, force: true }));
  const first = await startConformanceServer();
  const port = Number(new URL(first.url).port);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI_ENTRY, "proxy", "stdio", first.url],
    cwd: REPO_ROOT,
    env: { ...(process.env as Record<string, string>), NO_COLOR: "1", MCPMGR_HOME: home },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: "claude-ai", version: "0.1.0" });
  let listChanged = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void listChanged++);
  await client.connect(transport);
  stops.push(() => client.close());
  const call = async () =>
    ((await client.callTool({ name: "test_simple_text", arguments: {} })).content as { text: string }[])[0]?.text;
  const answer = await call();
  expect(answer).toBeString();

  // The server restarts on its port, as a workload does (an upgrade, a crash, `mcpmgr restart`).
  await first.stop();
  const second = await startConformanceServer({ args: ["--port", String(port)] });
  stops.push(() => second.stop());
  expect(await call()).toBe(answer);
  expect(await call()).toBe(answer);
  expect(stderr).toContain("the remote ended the MCP session (it restarted): mcpmgr opened a new one for this client");
  expect(stderr).not.toContain("Session not found");
  // The new server's lists may differ (an upgrade): the client is told to read them again.
  await eventually(() => listChanged > 0, 5_000, "tools/list_changed");
  expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("test_simple_text");
});
