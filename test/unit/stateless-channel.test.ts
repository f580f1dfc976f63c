/**
 * proxy stdio's StatelessChannel (a 2026-07-28 remote as the stdio bridge's server) against a
 * small HTTP endpoint in this process: a subscriptions/listen stream the remote acknowledged
 * and then ended is opened again under the same id; one it refused is not (the answer and a
 * warning say so); one the bridge cancels is closed at the remote and stays closed.
 */
import { afterEach, expect, test } from "bun:test";
import type { JsonRpcMessage } from "../../src/proxy/mcp-message.ts";
import { StatelessChannel } from "../../src/proxy/remote-client/stateless-channel.ts";
import { eventually } from "../support/raw-http.ts";

type ListenMode = "end-after-ack" | "refuse" | "stay-open";

interface Remote {
  readonly url: URL;
  /** The ids of the subscriptions/listen requests received, in order. */
  readonly listens: (string | number)[];
  /** How many listen streams the client closed. */
  closedByClient: number;
  stop(): void;
}

const remotes: Remote[] = [];
afterEach(() => {
  for (const remote of remotes.splice(0)) remote.stop();
});

function sse(messages: object[], keepOpen: boolean, onCancel: () => void): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const message of messages) controller.enqueue(encoder.encode(`data: ${JSON.stringify(message)}\n\n`));
      if (!keepOpen) controller.close();
    },
    cancel: onCancel,
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

function startRemote(mode: ListenMode): Remote {
  const remote: Remote & { server?: ReturnType<typeof Bun.serve> } = {
    url: new URL("http://127.0.0.1/"),
    listens: [],
    closedByClient: 0,
    stop: () => remote.server?.stop(true),
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const message = (await req.json()) as JsonRpcMessage;
      if (message.method !== "subscriptions/listen")
        return Response.json({ jsonrpc: "2.0", id: message.id, result: { resultType: "complete" } });
      const id = message.id as number;
      remote.listens.push(id);
      if (mode === "refuse")
        return Response.json(
          { jsonrpc: "2.0", id, error: { code: -32601, message: "Method not found" } },
          { status: 404 },
        );
      const meta = { "io.modelcontextprotocol/subscriptionId": id };
      const ack = {
        jsonrpc: "2.0",
        method: "notifications/subscriptions/acknowledged",
        params: { _meta: meta, notifications: { toolsListChanged: true } },
      };
      const ended = { jsonrpc: "2.0", id, result: { resultType: "complete", _meta: meta } };
      return sse(mode === "end-after-ack" ? [ack, ended] : [ack], mode === "stay-open", () => remote.closedByClient++);
    },
  });
  remote.server = server;
  (remote as { url: URL }).url = new URL(`http://127.0.0.1:${server.port}/mcp`);
  remotes.push(remote);
  return remote;
}

function channelTo(remote: Remote) {
  const warnings: string[] = [];
  const received: JsonRpcMessage[] = [];
  const channel = new StatelessChannel({
    url: remote.url,
    fetch: (url, init) => fetch(url, init),
    warn: (text) => warnings.push(text),
    version: "2026-07-28",
    reopenAfterMs: 20,
  });
  channel.onMessage = (message) => received.push(message as JsonRpcMessage);
  return { channel, warnings, received };
}

const listen = (id: number): JsonRpcMessage => ({
  jsonrpc: "2.0",
  id,
  method: "subscriptions/listen",
  params: {
    _meta: {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": {},
    },
    notifications: { toolsListChanged: true },
  },
});

test("a listen stream that was acknowledged and then ended is opened again, under the same id", async () => {
  const remote = startRemote("end-after-ack");
  const { channel, received } = channelTo(remote);
  try {
    channel.send(listen(7));
    await eventually(() => remote.listens.length >= 3, 5_000, "the stream opened twice more");
    expect(new Set(remote.listens)).toEqual(new Set([7]));
    // Each stream's acknowledgment reaches the bridge; the answers that ended them do not.
    expect(received.every((m) => m.method === "notifications/subscriptions/acknowledged")).toBe(true);
  } finally {
    channel.close();
  }
});

test("a listen stream the remote refuses is not asked again: its answer reaches the bridge, with a warning", async () => {
  const remote = startRemote("refuse");
  const { channel, received, warnings } = channelTo(remote);
  try {
    channel.send(listen(8));
    await eventually(() => received.length === 1, 5_000, "the refusal");
    expect(received[0]).toMatchObject({ id: 8, error: { code: -32601 } });
    expect(warnings).toEqual([
      expect.stringContaining("did not open a subscriptions/listen stream (Method not found)"),
    ]);
    // Ten reopening pauses later, still the one request.
    await Bun.sleep(200);
    expect(remote.listens).toEqual([8]);
  } finally {
    channel.close();
  }
});

test("a listen stream the bridge cancels is closed at the remote and stays closed", async () => {
  const remote = startRemote("stay-open");
  const { channel, received } = channelTo(remote);
  try {
    channel.send(listen(9));
    await eventually(() => received.length === 1, 5_000, "the acknowledgment");
    channel.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 9 } });
    await eventually(() => remote.closedByClient === 1, 5_000, "the stream closed at the remote");
    await Bun.sleep(200);
    expect(remote.listens).toEqual([9]);
  } finally {
    channel.close();
  }
});
