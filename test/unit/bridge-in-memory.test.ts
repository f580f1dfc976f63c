/**
 * The stdio bridge's in-memory tier: the bridge probe (a real MCP server built with the SDK)
 * on an in-memory ServerChannel instead of a child process's stdio, and SDK clients whose
 * fetch calls the streamable-HTTP front end directly. Routing is exercised in milliseconds;
 * the integration tests (bridge-*.test.ts) cover the same over real processes and sockets.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import {
  CreateMessageRequestSchema,
  type JSONRPCMessage,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { detachedContext, type Handler } from "../../src/proxy/handler.ts";
import { LiveStreams } from "../../src/proxy/live-streams.ts";
import { StdioBridge } from "../../src/proxy/stdio-bridge/bridge.ts";
import type { ServerChannel } from "../../src/proxy/stdio-bridge/server-channel.ts";
import { streamableHttpFrontEnd } from "../../src/proxy/stdio-bridge/streamable-http.ts";
import { createProbeServer, observe, type Stats } from "../fixtures/bridge-probe-server.ts";

interface Bridged {
  readonly bridge: StdioBridge;
  readonly handler: Handler;
  readonly stats: Stats;
  /** Ends the server's side of the channel, as a server that exits would. */
  serverGone(): Promise<void>;
}

async function bridgedProbe(): Promise<Bridged> {
  const stats: Stats = {
    initialize: 0,
    initialized: 0,
    methods: {},
    subscribe: {},
    unsubscribe: {},
    setLevel: [],
    cancelled: [],
    aborted: [],
    sleeping: 0,
  };
  const [ours, theirs] = InMemoryTransport.createLinkedPair();
  const server = createProbeServer(stats);
  await server.connect(theirs);
  const deliver = theirs.onmessage;
  theirs.onmessage = (message: JSONRPCMessage, extra) => {
    observe(stats, message);
    deliver?.(message, extra);
  };
  const bridge = new StdioBridge({ requestTimeoutMs: 5_000 });
  let ended!: () => void;
  const channel: ServerChannel = {
    send: (message) => void ours.send(message as JSONRPCMessage),
    closed: new Promise<void>((resolve) => (ended = resolve)),
  };
  ours.onmessage = (message) => bridge.onServerMessage(message);
  ours.onclose = () => ended();
  await ours.start();
  await bridge.start(channel);
  return {
    bridge,
    handler: streamableHttpFrontEnd({ bridge, live: new LiveStreams() }),
    stats,
    serverGone: () => theirs.close(),
  };
}

const sessions = new WeakMap<Client, string>();

/** An SDK client whose requests go straight to the front end: no socket anywhere. */
async function client(bridged: Bridged, name: string, capabilities: Record<string, object> = {}): Promise<Client> {
  const c = new Client({ name, version: "1.0.0" }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL("http://bridge.test/mcp"), {
    fetch: (url, init) => Promise.resolve(bridged.handler(new Request(String(url), init), detachedContext())),
  });
  await c.connect(transport);
  sessions.set(c, transport.sessionId as string);
  return c;
}

/** A raw tools/call in `c`'s session, with the id the test chooses. */
async function rawCall(c: Client, id: number, args: Record<string, unknown>): Promise<Record<string, any>> {
  const response = await probe.handler(
    new Request("http://bridge.test/mcp", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": sessions.get(c) as string,
        "mcp-protocol-version": "2025-06-18",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo", arguments: args } }),
    }),
    detachedContext(),
  );
  const text = await response.text();
  const data = text.includes("data: ") ? (/^data: (.*)$/m.exec(text)?.[1] as string) : text;
  return JSON.parse(data) as Record<string, any>;
}

async function call(
  c: Client,
  name: string,
  args: Record<string, unknown>,
  onprogress?: (p: { message?: string }) => void,
) {
  const result = await c.callTool({ name, arguments: args }, undefined, onprogress ? { onprogress } : undefined);
  return (result as { structuredContent: Record<string, any> }).structuredContent;
}

let probe: Bridged;
let a: Client;
let b: Client;

beforeAll(async () => {
  probe = await bridgedProbe();
  a = await client(probe, "A", { sampling: {} });
  b = await client(probe, "B");
  a.setRequestHandler(CreateMessageRequestSchema, async () => ({
    role: "assistant",
    content: { type: "text", text: "answer from A" },
    model: "test",
  }));
});
afterAll(async () => {
  await a.close();
  await b.close();
});

test("many client sessions, one server handshake; tools answer each session", async () => {
  expect(probe.bridge.sessionCount).toBe(2);
  expect(probe.stats.initialize).toBe(1);
  expect((await call(a, "echo", { text: "from A" })).text).toBe("from A");
  expect((await call(b, "echo", { text: "from B" })).text).toBe("from B");
});

test("the same request id from two sessions never meets: each answer goes back to its asker", async () => {
  const [fromA, fromB] = await Promise.all([
    rawCall(a, 7, { text: "slow A", delayMs: 50 }),
    rawCall(b, 7, { text: "quick B" }),
  ]);
  expect([fromA.id, fromB.id]).toEqual([7, 7]);
  expect(fromA.result.structuredContent.text).toBe("slow A");
  expect(fromB.result.structuredContent.text).toBe("quick B");
  // The server saw two different ids: the bridge's own.
  expect(fromA.result.structuredContent.requestId).not.toBe(fromB.result.structuredContent.requestId);
});

test("progress reaches only the session whose request it is about", async () => {
  const seenByA: string[] = [];
  const seenByB: string[] = [];
  await Promise.all([
    call(a, "progress", { steps: 3, delayMs: 5, tag: "a" }, (p) => seenByA.push(String(p.message))),
    call(b, "sleep", { ms: 30 }, (p) => seenByB.push(String(p.message))),
  ]);
  expect(seenByA).toEqual(["a:1", "a:2", "a:3"]);
  expect(seenByB).toEqual([]);
});

test("a server→client request goes to the session whose tool asked for it", async () => {
  expect((await call(a, "sample", { prompt: "hello" })).answer).toBe("answer from A");
  // B declared no sampling capability: its tool gets an error, not A's answer.
  const fromB = await call(b, "sample", { prompt: "hello" });
  expect(fromB.answer).toBeUndefined();
  expect(fromB.error).toBeString();
});

test("list_changed reaches every session", async () => {
  const heard: string[] = [];
  for (const [c, label] of [
    [a, "A"],
    [b, "B"],
  ] as const)
    c.setNotificationHandler(ToolListChangedNotificationSchema, () => void heard.push(label));
  await call(a, "notify_list_changed", {});
  const deadline = Date.now() + 5_000;
  while (heard.length < 2 && Date.now() < deadline) await Bun.sleep(5);
  expect(heard.sort()).toEqual(["A", "B"]);
});

test("when the server goes away, a request waiting on it fails instead of hanging; the bridge closes", async () => {
  const other = await bridgedProbe();
  const c = await client(other, "C");
  const waiting = call(c, "sleep", { ms: 10_000 }).then(
    () => "answered",
    (err: unknown) => String(err),
  );
  const deadline = Date.now() + 5_000;
  while (other.bridge.inFlightCount === 0 && Date.now() < deadline) await Bun.sleep(5);
  await other.serverGone();
  expect(await waiting).not.toBe("answered");
  expect(other.bridge.isClosed).toBe(true);
  await c.close().catch(() => {});
});
