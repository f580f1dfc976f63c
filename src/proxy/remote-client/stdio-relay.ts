/**
 * `proxy stdio`'s relay: a remote MCP endpoint offered to a stdio client. Messages are
 * relayed as they are, in both directions; the client's own messages choose the protocol
 * era towards the remote:
 *   - a request declaring a 2026-07-28 (or later) protocol version in its `_meta` is sent
 *     statelessly, one POST each with the headers that revision requires
 *     (stateless-requests.ts); the client does its own version negotiation (`server/discover`,
 *     UnsupportedProtocolVersion) and falls back to `initialize` with an older remote;
 *   - everything else (`initialize` and what follows it) goes through the SDK's streamable
 *     HTTP client transport: sessions, SSE answers, the server→client GET stream.
 * Every HTTP request goes through `fetch` (mcpmgr's credentials, when configured). The relay
 * ends when the client's input ends (after what was asked is answered, bounded) or the
 * connection fails; stdout carries only the protocol.
 */
import type { Readable, Writable } from "node:stream";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { errorMessage } from "../../errors.ts";
import type { UpstreamFetch } from "../authenticated-fetch.ts";
import { modernVersionOf } from "./request-headers.ts";
import { type JsonRpcRequest, StatelessRequests } from "./stateless-requests.ts";

export interface StdioRelayOptions {
  readonly target: URL;
  /** mcpmgr's authenticated fetch; plain fetch when undefined. */
  readonly fetch: UpstreamFetch | undefined;
  readonly stdin: Readable;
  readonly stdout: Writable;
  readonly log: { warn(text: string): void; error(text: string): void };
}

export interface StdioRelay {
  /** The exit code once the relay is over: 0 at the end of input, 1 when it failed. */
  readonly finished: Promise<number>;
}

/** How long answers to requests still in flight are waited for once the input ends. */
const DRAIN_MS = 30_000;

export async function startStdioRelay(options: StdioRelayOptions): Promise<StdioRelay> {
  const { target, fetch: upstreamFetch, log } = options;
  const remote = new StreamableHTTPClientTransport(
    target,
    upstreamFetch ? { fetch: (url, init) => upstreamFetch(String(url), init ?? {}) } : {},
  );
  const local = new StdioServerTransport(options.stdin, options.stdout);
  const stateless = new StatelessRequests({
    url: target,
    fetch: upstreamFetch ?? ((url, init) => fetch(url, init)),
    deliver: (message) => void local.send(message as JSONRPCMessage),
    warn: (text) => log.warn(`remote: ${text}`),
  });
  let done!: (code: number) => void;
  const finished = new Promise<number>((resolve) => {
    done = resolve;
  });
  let closing = false;
  const finish = async (why?: string) => {
    if (closing) return;
    closing = true;
    if (why) log.error(why);
    stateless.abortAll();
    // Ends the remote session (DELETE) when there is one.
    if (remote.sessionId !== undefined) await remote.terminateSession().catch(() => {});
    await remote.close().catch(() => {});
    await local.close().catch(() => {});
    done(why ? 1 : 0);
  };

  const pendingInitialize = new Set<string | number>();
  /** Requests sent and not answered yet: stdin may end before their answers arrive. */
  const inFlight = new Set<string | number>();
  // One message at a time, in order: a cancellation must not overtake its request.
  let sending: Promise<void> = Promise.resolve();
  local.onmessage = (message: JSONRPCMessage) => {
    const isRequest = "method" in message && "id" in message && message.id !== undefined;
    const version = isRequest ? modernVersionOf(message) : undefined;
    if (version !== undefined) {
      // Stateless: nothing to keep in order with other messages, each request stands alone.
      void stateless.send(message as JsonRpcRequest, version);
      return;
    }
    // On stdio a 2026-07-28 client cancels with a notification; over HTTP closing the stream says it.
    if (
      "method" in message &&
      message.method === "notifications/cancelled" &&
      stateless.cancel(message.params?.requestId)
    )
      return;
    if (isRequest && message.method === "initialize") pendingInitialize.add(message.id as string | number);
    if (isRequest) inFlight.add(message.id as string | number);
    sending = sending.then(() =>
      remote.send(message).catch((err: unknown) => {
        const text = errorMessage(err);
        // A request that could not be delivered gets an error answer, not silence.
        if (isRequest) {
          inFlight.delete(message.id as string | number);
          void local.send({
            jsonrpc: "2.0",
            id: message.id as string | number,
            error: { code: -32000, message: `mcpmgr could not reach the remote MCP server: ${text}` },
          });
        } else log.warn(`could not deliver a message to the remote: ${text}`);
      }),
    );
  };
  remote.onmessage = (message: JSONRPCMessage) => {
    if (!("method" in message) && "id" in message && message.id !== undefined) inFlight.delete(message.id);
    // The negotiated version goes on every later HTTP request (MCP-Protocol-Version).
    if ("id" in message && message.id !== undefined && pendingInitialize.delete(message.id) && "result" in message) {
      const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === "string") remote.setProtocolVersion(version);
    }
    void local.send(message);
  };
  remote.onerror = (err) => log.warn(`remote: ${err.message}`);
  local.onerror = (err) => log.warn(`stdin: ${err.message}`);
  // End of input: let what was asked be answered (bounded), then end the remote session.
  const drainThenFinish = async () => {
    await sending;
    const deadline = Date.now() + DRAIN_MS;
    while ((inFlight.size > 0 || stateless.pending > 0) && Date.now() < deadline) await Bun.sleep(20);
    await finish();
  };
  local.onclose = () => void drainThenFinish();
  options.stdin.once("end", () => void drainThenFinish());
  await remote.start();
  await local.start();
  return { finished };
}
