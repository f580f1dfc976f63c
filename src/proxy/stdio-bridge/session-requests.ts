/**
 * What the bridge answers itself for a session (2025-era client) before anything reaches
 * the server: ping; logging/setLevel (the server logs at the most verbose level any session
 * wants, the bridge filters per session; a modern server takes the level per request); and
 * resources/subscribe / unsubscribe (the server hears one subscribe and one unsubscribe per
 * URI, however many sessions want it; a modern server, which has no such methods, gets one
 * subscriptions/listen per URI instead).
 */
import { JsonRpcCode, type JsonRpcId } from "../jsonrpc.ts";
import type { ServerInit } from "./handshake.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import {
  errorResponse,
  isLogLevel,
  isSupportedProtocolVersion,
  latestProtocolVersion,
  type LogLevel,
} from "./messages.ts";
import { mostVerboseLevel, type SubscriberCounts } from "./shared-interest.ts";
import type { ClientSession } from "./session.ts";
import type { Sink } from "./sink.ts";
import { errorMessage } from "../../errors.ts";

export interface LocalAnswerContext {
  readonly subscribers: SubscriberCounts;
  readonly sessions: Iterable<ClientSession>;
  readonly modernServer: boolean;
  readonly serverLogLevel: LogLevel | undefined;
  setServerLogLevel(level: LogLevel): void;
  /** The session dropped its subscription; true when it was the last one for the URI. */
  lastUnsubscribe(uri: string): boolean;
  /** A modern server has no resources/subscribe: the bridge listens for the URI instead. */
  listenAtServer(uri: string, on: boolean): void;
}

/** Answers the request through `sink` and returns undefined, or returns the message to forward. */
export function answerLocally(
  session: ClientSession,
  message: JsonRpcMessage,
  sink: Sink,
  ctx: LocalAnswerContext,
): JsonRpcMessage | undefined {
  const id = message.id as JsonRpcId;
  switch (message.method) {
    case "ping":
      sink.send({ jsonrpc: "2.0", id, result: {} });
      return undefined;
    case "logging/setLevel": {
      const level = message.params?.level;
      if (!isLogLevel(level)) {
        sink.send(errorResponse(id, JsonRpcCode.invalidParams, "params.level must be an RFC 5424 level name"));
        return undefined;
      }
      session.logLevel = level;
      // The server logs at the most verbose level any session wants; the bridge filters per session.
      const wanted = mostVerboseLevel(ctx.sessions) as LogLevel;
      if (ctx.modernServer || wanted === ctx.serverLogLevel) {
        sink.send({ jsonrpc: "2.0", id, result: {} });
        return undefined;
      }
      ctx.setServerLogLevel(wanted);
      message = { ...message, params: { ...message.params, level: wanted } };
      return message;
    }
    case "resources/subscribe": {
      const uri = String(message.params?.uri ?? "");
      const first = !session.subscriptions.has(uri) && ctx.subscribers.add(uri);
      session.subscriptions.add(uri);
      if (first && ctx.modernServer) ctx.listenAtServer(uri, true);
      if (!first || ctx.modernServer) {
        sink.send({ jsonrpc: "2.0", id, result: {} });
        return undefined;
      }
      return message;
    }
    case "resources/unsubscribe": {
      const uri = String(message.params?.uri ?? "");
      const last = session.subscriptions.delete(uri) && ctx.lastUnsubscribe(uri);
      if (last && ctx.modernServer) ctx.listenAtServer(uri, false);
      if (!last || ctx.modernServer) {
        sink.send({ jsonrpc: "2.0", id, result: {} });
        return undefined;
      }
      return message;
    }
  }
  return message;
}

/**
 * A session's initialize, answered by the bridge from the server's own handshake (the
 * server sees one client): the client's version when the bridge speaks it, else its latest.
 */
export async function initializeSession(
  session: ClientSession,
  message: JsonRpcMessage,
  sink: Sink,
  server: Promise<ServerInit>,
): Promise<void> {
  const requested = String(message.params?.protocolVersion ?? "");
  session.protocolVersion =
    isSupportedProtocolVersion(requested) && requested < "2026" ? requested : latestProtocolVersion;
  session.capabilities = (message.params?.capabilities as ClientSession["capabilities"]) ?? {};
  let init: ServerInit;
  try {
    init = await server;
  } catch (err) {
    sink.send(errorResponse(message.id as JsonRpcId, JsonRpcCode.internalError, errorMessage(err)));
    return;
  }
  session.initialized = true;
  const result: Record<string, unknown> = {
    protocolVersion: session.protocolVersion,
    capabilities: init.capabilities,
    serverInfo: init.serverInfo,
  };
  if (init.instructions !== undefined) result.instructions = init.instructions;
  sink.send({ jsonrpc: "2.0", id: message.id as JsonRpcId, result });
}
