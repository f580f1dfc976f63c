/**
 * The gateway's fast lane for tools/call resumes a member's event stream (src/gateway/member-stream.ts):
 * a 2025-11-25 member (the SDK's server with an event store) that closes a call's stream before it
 * answers, after a priming event with an id and `retry`, is asked again with a GET carrying
 * `Last-Event-ID`, and the call is answered as through the SDK. A stream that ends without an id still
 * fails the call, and a cancellation during the wait ends it without a resumption.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { type JSONRPCMessage, Server, WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import { createTestGroup, type TestGroup, until } from "../support/gateway-group.ts";
import { answerMessages, openRawSession } from "../support/raw-session.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

interface Resumption {
  readonly lastEventId: string;
  readonly sessionId: string | null;
  readonly protocolVersion: string | null;
}

interface PollingMember {
  readonly url: string;
  /** Every GET that resumed a stream, as the member received it. */
  readonly resumptions: Resumption[];
  /** What the tools did ("hold: closed", "hold: cancelled"). */
  readonly log: string[];
  stop(): void;
}

/** An in-memory event store, as the SDK's resumability asks of a server. */
function eventStore() {
  const events = new Map<string, { stream: string; message: JSONRPCMessage }>();
  let next = 0;
  return {
    async storeEvent(stream: string, message: JSONRPCMessage) {
      const id = `${stream}::${++next}`;
      events.set(id, { stream, message });
      return id;
    },
    async getStreamIdForEventId(id: string) {
      return events.get(id)?.stream;
    },
    async replayEventsAfter(last: string, { send }: { send: (id: string, message: JSONRPCMessage) => Promise<void> }) {
      const stream = events.get(last)?.stream as string;
      let after = false;
      for (const [id, event] of events) {
        if (id === last) after = true;
        else if (after && event.stream === stream) await send(id, event.message);
      }
      return stream;
    },
  };
}

const TOOLS = ["poll", "poll_twice", "cut", "lost", "hold"].map((name) => ({ name, inputSchema: { type: "object" } }));

/**
 * A streamable-HTTP member on the SDK's server that polls: its tools close the call's stream
 * (`closeSSE`) before they answer. `cut` and `lost` are answered by the member's HTTP layer: a stream
 * that ends without an event id, and one that ends after an id the member cannot resume (503).
 */
function startPollingMember(retryInterval: number): PollingMember {
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();
  const resumptions: Resumption[] = [];
  const log: string[] = [];
  const store = eventStore();
  const http = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const sessionId = req.headers.get("mcp-session-id");
      const lastEventId = req.headers.get("last-event-id");
      if (req.method === "GET" && lastEventId)
        resumptions.push({ lastEventId, sessionId, protocolVersion: req.headers.get("mcp-protocol-version") });
      if (req.method === "POST") {
        const text = await req.clone().text();
        if (text.includes('"name":"cut"'))
          return new Response(": no id on this stream\n\n", { headers: { "content-type": "text/event-stream" } });
        if (text.includes('"name":"lost"'))
          return new Response("id: lost-1\nretry: 10\ndata: \n\n", {
            headers: { "content-type": "text/event-stream" },
          });
      }
      if (lastEventId === "lost-1") return new Response("try later", { status: 503 });
      if (sessionId) return sessions.get(sessionId)?.handleRequest(req) ?? new Response("gone", { status: 404 });
      const server = new Server({ name: "poller", version: "1" }, { capabilities: { tools: {} } });
      server.setRequestHandler("tools/list", () => ({ tools: TOOLS }) as never);
      server.setRequestHandler("tools/call", async (request, ctx) => {
        const name = (request.params as { name: string }).name;
        await Bun.sleep(50);
        ctx.http?.closeSSE?.();
        if (name === "hold") {
          log.push("hold: closed");
          const cancelled = await new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => resolve(false), 15_000);
            ctx.mcpReq.signal.addEventListener("abort", () => {
              clearTimeout(timer);
              resolve(true);
            });
          });
          log.push(`hold: ${cancelled ? "cancelled" : "finished"}`);
          return { content: [{ type: "text", text: "held" }] } as never;
        }
        if (name === "poll_twice") {
          await Bun.sleep(200);
          const progressToken = ctx.mcpReq._meta?.progressToken;
          if (progressToken !== undefined)
            await ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken, progress: 1 } });
          await Bun.sleep(100);
          ctx.http?.closeSSE?.();
        }
        await Bun.sleep(300);
        return { content: [{ type: "text", text: `${name}: answered` }] } as never;
      });
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        eventStore: store as never,
        retryInterval,
        onsessioninitialized: (id) => void sessions.set(id, transport),
      });
      await server.connect(transport);
      return transport.handleRequest(req);
    },
  });
  return { url: `http://127.0.0.1:${http.port}/mcp`, resumptions, log, stop: () => http.stop(true) };
}

let group: TestGroup;
let gateway: Awaited<ReturnType<TestGroup["gateway"]>>;
/** Asks to be polled again after 50 ms. */
let quick: PollingMember;
/** Asks for 20 s: long enough to cancel a call while the gateway waits. */
let patient: PollingMember;

beforeAll(async () => {
  group = await createTestGroup();
  quick = startPollingMember(50);
  patient = startPollingMember(20_000);
  group.run(quick.url, "quick", "polling");
  group.run(patient.url, "patient", "polling");
  gateway = await group.gateway("polling");
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  quick?.stop();
  patient?.stop();
});

/** A 2025-11-25 session over raw HTTP: what it returns POSTs a message in the session. */
async function openSession(): Promise<(body: object) => Promise<Response>> {
  const session = await openRawSession(gateway.url, "2025-11-25", "poll");
  return (body) => session.post(JSON.stringify(body));
}

const call = (id: number, name: string, meta?: object) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: {}, ...(meta ? { _meta: meta } : {}) },
});

test("a member that closes the call's stream before it answers is resumed with Last-Event-ID on its session", async () => {
  const post = await openSession();
  const before = quick.resumptions.length;
  const answer = await answerMessages(await post(call(1, "quick_poll")));
  expect(answer.at(-1)).toEqual({
    jsonrpc: "2.0",
    id: 1,
    result: { content: [{ type: "text", text: "poll: answered" }] },
  });
  const resumed = quick.resumptions.slice(before);
  expect(resumed).toHaveLength(1);
  // The GET named the member session and revision the call's POST did, and the last id it saw.
  expect(resumed[0]?.sessionId).toBeString();
  expect(resumed[0]?.protocolVersion).toBe("2025-11-25");
  // An id of the member's event store (stream::n): the priming event's.
  expect(resumed[0]?.lastEventId).toMatch(/::\d+$/);
});

test("a member that closes twice is resumed twice; progress sent between arrives under the client's token", async () => {
  const post = await openSession();
  const before = quick.resumptions.length;
  const answer = await answerMessages(await post(call(2, "quick_poll_twice", { progressToken: "mine" })));
  const progress = answer.filter((message) => message.method === "notifications/progress");
  expect(progress.map((message) => (message.params as { progressToken: unknown }).progressToken)).toEqual(["mine"]);
  expect(answer.at(-1)).toEqual({
    jsonrpc: "2.0",
    id: 2,
    result: { content: [{ type: "text", text: "poll_twice: answered" }] },
  });
  const resumed = quick.resumptions.slice(before);
  expect(resumed).toHaveLength(2);
  expect(new Set(resumed.map((resumption) => resumption.sessionId)).size).toBe(1);
});

test("a stream that ends without an event id fails the call as before, with no resumption", async () => {
  const post = await openSession();
  const before = quick.resumptions.length;
  const answer = await answerMessages(await post(call(3, "quick_cut")));
  expect(answer).toEqual([
    {
      jsonrpc: "2.0",
      id: 3,
      error: {
        code: -32603,
        message:
          "workload 'quick' failed to answer (its stream ended early); its tools, prompts and resources are unavailable",
        data: { workload: "quick" },
      },
    },
  ]);
  expect(quick.resumptions.length).toBe(before);
});

test("resumptions that fail give up after a few tries, with the error the call had before", async () => {
  const post = await openSession();
  const before = quick.resumptions.length;
  const answer = await answerMessages(await post(call(5, "quick_lost")));
  expect(answer).toEqual([
    {
      jsonrpc: "2.0",
      id: 5,
      error: {
        code: -32603,
        message:
          "workload 'quick' failed to answer (its stream ended early and resuming it failed: HTTP 503); its tools, prompts and resources are unavailable",
        data: { workload: "quick" },
      },
    },
  ]);
  expect(quick.resumptions.slice(before).map((resumption) => resumption.lastEventId)).toEqual([
    "lost-1",
    "lost-1",
    "lost-1",
  ]);
});

test("a cancellation while the gateway waits the member's retry interval ends the call without a resumption", async () => {
  const post = await openSession();
  const started = Date.now();
  const pending = post(call(4, "patient_hold"));
  expect(await until(() => patient.log.includes("hold: closed"))).toBe(true);
  await (
    await post({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: 4, reason: "changed my mind" },
    })
  ).text();
  // The member hears the cancellation, and the client's stream ends with no answer (MCP sends none).
  expect(await until(() => patient.log.includes("hold: cancelled"))).toBe(true);
  const answer = await answerMessages(await pending);
  expect(answer.filter((message) => message.id === 4)).toEqual([]);
  // Well before the 20 s the member asked for, and no GET was made.
  expect(Date.now() - started).toBeLessThan(15_000);
  expect(patient.resumptions).toEqual([]);
});
