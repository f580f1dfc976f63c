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
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { startMemberServer } from "../fixtures/member-server.ts";
import { eventually } from "../support/raw-http.ts";
import { startConformanceServer } from "../support/conformance.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";
import { relayTransport } from "../support/stdio-relay-process.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

const stops: (() => Promise<unknown>)[] = [];

/** `proxy stdio URL` as Claude Desktop's entry starts it, in a home of its own; what it writes on stderr, kept. */
async function homeRelayTransport(url: string): Promise<{ transport: StdioClientTransport; stderr: () => string }> {
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-relay-renewal-"));
  stops.push(() => rm(home, { recursive: true, force: true }));
  return relayTransport(url, { MCPMGR_HOME: home });
}

/** The SDK client on `proxy stdio URL`. */
async function relayedClient(url: string, options: ConstructorParameters<typeof Client>[1] = {}): Promise<Client> {
  const { transport } = await homeRelayTransport(url);
  const client = new Client({ name: "claude-ai", version: "0.1.0" }, options);
  await client.connect(transport);
  stops.push(() => client.close());
  return client;
}
afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => {});
});

test("a remote that restarts (its sessions forgotten) is given a new session: the stdio client's next call works", async () => {
  const first = await startConformanceServer();
  const port = Number(new URL(first.url).port);
  const { transport, stderr } = await homeRelayTransport(first.url);
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
  expect(stderr()).toContain(
    "the remote ended the MCP session (it restarted): mcpmgr opened a new one for this client",
  );
  expect(stderr()).not.toContain("Session not found");
  // The new server's lists may differ (an upgrade): the client is told to read them again.
  await eventually(() => listChanged > 0, 5_000, "tools/list_changed");
  expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("test_simple_text");
});

test("a renewal that failed (the port answered 404 to the new initialize too) is tried again at the next message", async () => {
  const first = await startConformanceServer();
  const port = Number(new URL(first.url).port);
  const { transport, stderr } = await homeRelayTransport(first.url);
  const client = new Client({ name: "claude-ai", version: "0.1.0" });
  await client.connect(transport);
  stops.push(() => client.close());
  const call = async () =>
    ((await client.callTool({ name: "test_simple_text", arguments: {} })).content as { text: string }[])[0]?.text;
  const answer = await call();

  // While the server is down, something else on its port answers 404 to everything (the session and the
  // relay's new initialize alike): that message fails, with the 404.
  await first.stop();
  const other = Bun.serve({ port, hostname: "127.0.0.1", fetch: () => new Response("not here", { status: 404 }) });
  try {
    await expect(call()).rejects.toThrow(/404|not here/);
  } finally {
    await other.stop(true);
  }
  // The server is back: the relay, which still has no session, opens one at the next message.
  const second = await startConformanceServer({ args: ["--port", String(port)] });
  stops.push(() => second.stop());
  expect(await call()).toBe(answer);
  expect(await call()).toBe(answer);
  expect(stderr()).toContain("could not open a new MCP session");
});

test("a request in progress when the remote restarted is answered with an error at the renewal, not sent again", async () => {
  const first = await startConformanceServer();
  const port = Number(new URL(first.url).port);
  const { transport } = await homeRelayTransport(first.url);
  const client = new Client({ name: "claude-ai", version: "0.1.0" }, { capabilities: { elicitation: {} } });
  // The user never answers: the tool call waits on the server until it goes away.
  let asked = false;
  client.setRequestHandler(ElicitRequestSchema, () => {
    asked = true;
    return new Promise(() => {});
  });
  await client.connect(transport);
  stops.push(() => client.close());
  const waiting = client.callTool({ name: "test_elicitation", arguments: { message: "go on?" } }).then(
    () => "answered",
    (err: Error) => err.message,
  );
  await eventually(() => asked, 10_000, "the elicitation");
  await first.stop();
  const second = await startConformanceServer({ args: ["--port", String(port)] });
  stops.push(() => second.stop());
  // The next message renews the session; the call that was waiting on the old one is told its answer is lost.
  await client.callTool({ name: "test_simple_text", arguments: {} });
  const outcome = await Promise.race([waiting, Bun.sleep(5_000).then(() => "still waiting")]);
  expect(outcome).toContain("the remote ended the MCP session while this request was in progress");
});

test("the log level the client set is set again in the renewed session", async () => {
  const first = await startConformanceServer();
  const port = Number(new URL(first.url).port);
  const client = await relayedClient(first.url);
  const lines: string[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (note) => void lines.push(String(note.params.data)));
  const logged = async () => {
    lines.length = 0;
    await client.callTool({ name: "test_tool_with_logging", arguments: {} });
    return [...lines];
  };
  expect(await logged()).toContain("Tool execution started");
  await client.setLoggingLevel("error");
  expect(await logged()).toEqual([]);

  await first.stop();
  const second = await startConformanceServer({ args: ["--port", String(port)] });
  stops.push(() => second.stop());
  // The call that meets the 404 renews the session: the info lines the client turned off stay off.
  expect(await logged()).toEqual([]);
});

test("the resources the client subscribed to are subscribed to again in the renewed session", async () => {
  const options = { name: "docs", resources: ["note://a", "note://b"], subscribable: {} };
  const first = startMemberServer(options);
  const port = Number(new URL(first.url).port);
  const client = await relayedClient(first.url);
  const updates: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (note) => void updates.push(note.params.uri));
  await client.subscribeResource({ uri: "note://a" });
  await client.subscribeResource({ uri: "note://b" });
  await client.unsubscribeResource({ uri: "note://b" });
  expect(first.subscribers("note://a")).toBe(1);

  await first.stop();
  const second = startMemberServer({ ...options, port });
  stops.push(() => second.stop());
  await client.listResources();
  expect(second.subscribers("note://a")).toBe(1);
  expect(second.subscribers("note://b")).toBe(0);
  await eventually(() => second.openStreams > 0, 5_000, "the renewed session's event stream");
  await second.updated("note://a");
  await eventually(() => updates.includes("note://a"), 5_000, "notifications/resources/updated");
});

test("list_changed after a renewal: for the lists the client was told may change, not the new server's others", async () => {
  // The server the client met lists tools only; the one that answers after the restart has prompts too.
  const first = startMemberServer({ name: "docs", tools: ["read"] });
  const port = Number(new URL(first.url).port);
  const client = await relayedClient(first.url);
  const told: string[] = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void told.push("tools"));
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => void told.push("prompts"));
  expect(client.getServerCapabilities()?.prompts).toBeUndefined();
  await first.stop();
  const second = startMemberServer({ name: "docs", tools: ["read"], prompts: ["brief"], port });
  stops.push(() => second.stop());
  // The notifications are written before the answer of the call that renewed the session.
  await client.listTools();
  expect(told).toEqual(["tools"]);
});

test("a client that only listens (subscribed, sending nothing) gets its session renewed when the event stream meets the 404", async () => {
  const options = { name: "docs", resources: ["note://a"], subscribable: {} };
  const first = startMemberServer(options);
  const port = Number(new URL(first.url).port);
  const client = await relayedClient(first.url);
  const updates: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (note) => void updates.push(note.params.uri));
  await client.subscribeResource({ uri: "note://a" });
  await eventually(() => first.openStreams > 0, 5_000, "the event stream");

  // The server restarts at once; the client says nothing and waits for updates.
  await first.stop();
  const second = startMemberServer({ ...options, port });
  stops.push(() => second.stop());
  await eventually(() => second.subscribers("note://a") === 1, 10_000, "the subscription in a renewed session");
  await eventually(() => second.openStreams > 0, 5_000, "the renewed session's event stream");
  await second.updated("note://a");
  await eventually(() => updates.includes("note://a"), 5_000, "notifications/resources/updated");
});

test("the client's notifications/initialized meeting the 404 is not sent twice: the renewal sent it", async () => {
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-relay-renewal-"));
  stops.push(() => rm(home, { recursive: true, force: true }));
  const first = startMemberServer({ name: "docs", tools: ["read"] });
  const port = Number(new URL(first.url).port);
  const relay = Bun.spawn([process.execPath, CLI_ENTRY, "proxy", "stdio", first.url], {
    cwd: REPO_ROOT,
    env: { ...(process.env as Record<string, string>), NO_COLOR: "1", MCPMGR_HOME: home },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  stops.push(async () => relay.kill());
  const lines = relay.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const nextAnswer = async (): Promise<unknown> => {
    while (!buffered.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) throw new Error("the relay ended");
      buffered += value;
    }
    const [line = "", ...rest] = buffered.split("\n");
    buffered = rest.join("\n");
    return JSON.parse(line);
  };
  const write = (message: object) => relay.stdin.write(`${JSON.stringify(message)}\n`);
  write({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "claude-ai", version: "1" } },
  });
  expect(await nextAnswer()).toMatchObject({ id: 1, result: {} });
  // The server restarts between the client's initialize and its initialized.
  await first.stop();
  const second = startMemberServer({ name: "docs", tools: ["read"], port });
  stops.push(() => second.stop());
  write({ jsonrpc: "2.0", method: "notifications/initialized" });
  write({ jsonrpc: "2.0", id: 2, method: "tools/list" });
  let answer = await nextAnswer();
  while ((answer as { id?: unknown }).id !== 2) answer = await nextAnswer();
  expect(JSON.stringify(answer)).toContain('"name":"read"');
  await eventually(() => second.openStreams > 0, 5_000, "the renewed session's event stream");
  relay.stdin.end();
  expect(await relay.exited).toBe(0);
  const stderr = await new Response(relay.stderr).text();
  expect(stderr).toContain("mcpmgr opened a new one for this client");
  // A second initialized opened a second event stream, which the server refused (409).
  expect(stderr).not.toContain("Conflict");
});

test("a server that answers its event stream's GET with 404 (it has none) keeps its one session", async () => {
  const member = startMemberServer({ name: "docs", tools: ["read"] });
  stops.push(() => member.stop());
  // A router with POST and DELETE only, as many servers have: GET is 404, not the 405 MCP asks for.
  const postOnly = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request) =>
      request.method === "GET"
        ? new Response("Not Found", { status: 404 })
        : fetch(member.url, { method: request.method, headers: request.headers, body: request.body }),
  });
  stops.push(async () => postOnly.stop(true));
  const client = await relayedClient(`http://127.0.0.1:${postOnly.port}/mcp`);
  for (let round = 0; round < 3; round++) await client.listTools();
  await client.ping();
  expect(member.sessionsOpened).toBe(1);
});

test("a remote that forgets every session at once: a quiet client's session is renewed a few times, not without end", async () => {
  const member = startMemberServer({ name: "docs", tools: ["read"], forgetSessionsAfterMs: 200 });
  stops.push(() => member.stop());
  const client = await relayedClient(member.url);
  // The client's session, then three renewals while it says nothing (each event stream ends, and its
  // reopening meets the 404 about a second later).
  await eventually(() => member.sessionsOpened >= 4, 20_000, "three renewals");
  const opened = member.sessionsOpened;
  // Three more reopenings' worth of time: none renews.
  await Bun.sleep(4_000);
  expect(member.sessionsOpened).toBe(opened);
  // The client speaks again: its message renews the session and is answered.
  expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("read");
});
