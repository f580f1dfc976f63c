/**
 * `mcpmgr proxy stdio` between a 2025-era stdio client (the SDK 1.x Client with its stdio
 * transport, as Claude Desktop and most clients still are) and remotes that speak only MCP
 * 2026-07-28: the remote refuses initialize, so mcpmgr answers it from server/discover and
 * translates the session — each request a stateless POST with the revision's `_meta` and
 * headers, input rounds asked of the client as its own sampling/elicitation/roots requests,
 * progress and logs of the call relayed, list changes and resource updates from mcpmgr's own
 * subscriptions/listen streams (opened again when the remote drops them), and cancellation
 * closing the call's HTTP request.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  type Progress,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { type ModernServer, startModernServer } from "../fixtures/modern-server.ts";
import { CONFORMANCE_FIXTURE_2026, type RunningFixture, startConformanceServer } from "../support/conformance.ts";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI_ENTRY, spawnUntil } from "../support/processes.ts";
import { eventually } from "../support/raw-http.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

/** Announces a change until it arrives: a listen stream opens (and is acknowledged) a moment after it is asked for. */
async function announceUntil(announce: () => unknown, arrived: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 20_000;
  while (!arrived()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await announce();
    for (let i = 0; i < 25 && !arrived(); i++) await Bun.sleep(10);
  }
}

let modern: ModernServer;
let fixture: RunningFixture;
beforeAll(async () => {
  modern = startModernServer();
  fixture = await startConformanceServer({ fixture: CONFORMANCE_FIXTURE_2026, args: ["--modern-only"] });
});
afterAll(async () => {
  modern.stop();
  await fixture.stop();
});

interface Connected {
  readonly client: Client;
  stderr(): string;
}

async function connect(url: string): Promise<Connected> {
  const client = new Client(
    { name: "claude-like", version: "0.9.0" },
    { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
  );
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI_ENTRY, "proxy", "stdio", url],
    env: { ...(process.env as Record<string, string>), NO_COLOR: "1" },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

test("initialize is answered from server/discover; lists, reads and calls reach the remote as 2026-07-28 requests", async () => {
  modern.seen.length = 0;
  const { client, stderr } = await connect(modern.url);
  try {
    expect(client.getServerVersion()).toEqual({ name: "modern-fixture", version: "1.0.0" });
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["slow", "where"]);
    const result = await client.callTool({ name: "where", arguments: { region: "eu west" } });
    expect(result.content).toEqual([{ type: "text", text: "in eu west" }]);
    expect(await client.ping()).toEqual({});
    expect(stderr()).toContain("translates");
  } finally {
    await client.close();
  }
  // The client's initialize was refused (the remote has no sessions); everything after it is per request.
  const [refused, ...modernRequests] = modern.seen;
  expect(refused).toMatchObject({ method: "POST", protocolVersion: null, mcpMethod: null });
  expect(modernRequests.map((r) => r.mcpMethod)).toEqual(
    expect.arrayContaining(["server/discover", "subscriptions/listen", "tools/list", "tools/call"]),
  );
  for (const request of modernRequests) {
    expect(request).toMatchObject({ method: "POST", protocolVersion: "2026-07-28", sessionId: null });
    expect(request.mcpMethod).not.toBeNull();
  }
  // ping is answered by mcpmgr: the revision removed it.
  expect(modernRequests.some((r) => r.mcpMethod === "ping")).toBe(false);
  expect(modernRequests.find((r) => r.mcpMethod === "tools/call")).toMatchObject({
    mcpName: "where",
    region: "eu west",
  });
});

test("prompts, resources and templates of a 2026-only remote", async () => {
  const { client } = await connect(fixture.url);
  try {
    expect(client.getServerVersion()?.name).toBe("mcpmgr-conformance-fixture-2026");
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toContain("test_simple_prompt");
    const prompt = await client.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg1: "a", arg2: "b" } });
    expect(prompt.messages[0]?.content).toEqual({ type: "text", text: "Prompt with arguments: arg1='a', arg2='b'" });
    expect((await client.listResources()).resources.map((r) => r.uri)).toContain("test://static-text");
    const read = await client.readResource({ uri: "test://template/7/data" });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toMatchObject({ id: "7", templateTest: true });
  } finally {
    await client.close();
  }
});

test("the remote's input rounds are asked with the client's own handlers, and the call completes", async () => {
  const { client } = await connect(fixture.url);
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(`elicitation: ${request.params.message}`);
    return { action: "accept", content: { username: "ada", email: "ada@example.org", name: "Ada" } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    asked.push(`sampling: ${JSON.stringify(request.params.messages[0]?.content)}`);
    return { role: "assistant", content: { type: "text", text: "Paris" }, model: "test-model" };
  });
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    asked.push("roots");
    return { roots: [{ uri: "file:///work", name: "work" }] };
  });
  try {
    const elicited = await client.callTool({ name: "test_elicitation", arguments: { message: "Who are you?" } });
    expect(elicited.content).toEqual([
      {
        type: "text",
        text: 'User response: action=accept, content={"username":"ada","email":"ada@example.org","name":"Ada"}',
      },
    ]);
    const sampled = await client.callTool({ name: "test_sampling", arguments: { prompt: "Capital of France?" } });
    expect(sampled.content).toEqual([{ type: "text", text: "LLM response: Paris" }]);
    const roots = await client.callTool({ name: "test_input_required_result_list_roots", arguments: {} });
    expect(roots.content).toEqual([{ type: "text", text: "Client exposed 1 root(s)" }]);
    // Two rounds, the second carrying the remote's sealed requestState back.
    const twice = await client.callTool({ name: "test_input_required_result_multi_round", arguments: {} });
    expect(twice.content).toEqual([{ type: "text", text: "Multi-round complete" }]);
    // Three questions in one round, each to its handler.
    const three = await client.callTool({ name: "test_input_required_result_multiple_inputs", arguments: {} });
    expect(three.content).toEqual([{ type: "text", text: "all three answered" }]);
    expect(asked).toEqual([
      "elicitation: Who are you?",
      'sampling: {"type":"text","text":"Capital of France?"}',
      "roots",
      "elicitation: Step 1: What is your name?",
      "elicitation: Step 2: What is your favorite color?",
      "elicitation: What is your name?",
      'sampling: {"type":"text","text":"Generate a greeting"}',
      "roots",
    ]);
  } finally {
    await client.close();
  }
});

test("progress and the log messages of a call reach the client; without a log level it gets none", async () => {
  const { client } = await connect(fixture.url);
  const logs: string[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(String(n.params.data)));
  try {
    const progress: Progress[] = [];
    const result = await client.callTool({ name: "test_tool_with_progress", arguments: {} }, undefined, {
      onprogress: (p) => progress.push(p),
    });
    expect(result.isError).toBeFalsy();
    expect(progress.map((p) => p.progress)).toEqual([0, 50, 100]);
    // A 2026-07-28 server logs only for requests that ask for a level: the session's is sent on each request.
    await client.callTool({ name: "test_tool_with_logging", arguments: {} });
    await client.setLoggingLevel("info");
    await client.callTool({ name: "test_tool_with_logging", arguments: {} });
    await eventually(() => logs.length >= 3, 5_000, "three log messages");
    expect(logs).toEqual(["Tool execution started", "Tool execution processing", "Tool execution completed"]);
  } finally {
    await client.close();
  }
});

test("list changes and the resource updates the client subscribed to reach it", async () => {
  const { client } = await connect(fixture.url);
  let toolsChanged = 0;
  const updated: string[] = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void toolsChanged++);
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
  try {
    await client.callTool({ name: "test_trigger_tool_change", arguments: {} });
    await eventually(() => toolsChanged === 1, 5_000, "tools/list_changed");
    expect(await client.subscribeResource({ uri: "test://watched-resource" })).toEqual({});
    await announceUntil(
      () => client.callTool({ name: "test_trigger_resource_update", arguments: {} }),
      () => updated.length > 0,
      "resources/updated",
    );
    expect(new Set(updated)).toEqual(new Set(["test://watched-resource"]));
    expect(await client.unsubscribeResource({ uri: "test://watched-resource" })).toEqual({});
  } finally {
    await client.close();
  }
});

test("a list-change stream the remote drops is opened again, and changes reach the client after it", async () => {
  modern.seen.length = 0;
  const { client } = await connect(modern.url);
  let toolsChanged = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void toolsChanged++);
  const listens = () => modern.seen.filter((r) => r.mcpMethod === "subscriptions/listen").length;
  try {
    await eventually(() => listens() === 1, 5_000, "the listen stream");
    modern.dropListens();
    await eventually(() => listens() === 2, 5_000, "the listen stream opened again");
    await announceUntil(
      () => modern.toolsChanged(),
      () => toolsChanged > 0,
      "tools/list_changed after the drop",
    );
  } finally {
    await client.close();
  }
});

test("a call the client cancels closes its HTTP request at the remote", async () => {
  modern.cancelled.length = 0;
  const { client } = await connect(modern.url);
  try {
    const controller = new AbortController();
    const call = client.callTool({ name: "slow", arguments: {} }, undefined, { signal: controller.signal });
    await eventually(() => modern.seen.some((r) => r.mcpName === "slow"), 5_000, "the slow call at the remote");
    controller.abort();
    await expect(call).rejects.toThrow();
    await eventually(() => modern.cancelled.length > 0, 5_000, "the remote seeing the cancellation");
    expect(modern.cancelled).toEqual(["slow"]);
    // The session goes on.
    expect((await client.callTool({ name: "where", arguments: { region: "x" } })).content).toEqual([
      { type: "text", text: "in x" },
    ]);
  } finally {
    await client.close();
  }
});

test("a workload of the remote (what Claude Desktop's entry reaches), its tool filter included: the same translation", async () => {
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-legacy-client-"));
  const workload = await spawnUntil(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "--foreground",
      fixture.url,
      "--tools",
      "test_elicitation,test_trigger_tool_change",
    ],
    /^(http:\/\/\S+)$/m,
    { env: { MCPMGR_HOME: home }, timeoutMs: 30_000 },
  );
  try {
    const { client } = await connect(workload.match[1] as string);
    client.setRequestHandler(ElicitRequestSchema, async () => ({
      action: "accept",
      content: { username: "ada", email: "ada@example.org" },
    }));
    let toolsChanged = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void toolsChanged++);
    try {
      // The proxy's tool filter sees the translated requests as the 2026-07-28 requests they are.
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual([
        "test_elicitation",
        "test_trigger_tool_change",
      ]);
      const elicited = await client.callTool({ name: "test_elicitation", arguments: { message: "Hi?" } });
      expect(elicited.content).toEqual([
        { type: "text", text: 'User response: action=accept, content={"username":"ada","email":"ada@example.org"}' },
      ]);
      await client.callTool({ name: "test_trigger_tool_change", arguments: {} });
      await eventually(() => toolsChanged === 1, 5_000, "tools/list_changed through the proxy");
      await expect(client.callTool({ name: "test_simple_text", arguments: {} })).rejects.toThrow();
    } finally {
      await client.close();
    }
  } finally {
    await workload.stop();
    await rm(home, { recursive: true, force: true });
  }
});
