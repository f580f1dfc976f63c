/**
 * The stdio bridge: many HTTP client sessions on one stdio MCP server.
 *
 * The server sees a single client: one initialize handshake (made by the bridge),
 * one notifications/initialized. Every client request is forwarded under a fresh
 * bridge-wide numeric id (and a fresh progress token), so identical ids from
 * different sessions can never meet; the server's answer is routed back by that id
 * alone. Server-initiated traffic is routed by what it refers to: progress by token,
 * resources/updated to subscribers, list_changed to everyone, log messages to the
 * sessions whose level admits them, and server→client requests to the session whose
 * request the server is working on (see #attribute).
 */
import { randomUUID } from "node:crypto";
import { JsonRpcCode, type JsonRpcId } from "../jsonrpc.ts";
import {
  errorResponse,
  isLogLevel,
  isSupportedProtocolVersion,
  kindOf,
  latestProtocolVersion,
  progressTokenOf,
  type JsonRpcMessage,
  type LogLevel,
} from "./messages.ts";
import type { ServerChannel } from "./server-channel.ts";
import { routeServerNotification } from "./server-notifications.ts";
import { mostVerboseLevel, SubscriberCounts } from "./shared-interest.ts";
import { ClientSession, type InFlight } from "./session.ts";
import type { Sink } from "./sink.ts";

export interface BridgeOptions {
  /** How long a request may wait for the server's answer (default 10 minutes). */
  readonly requestTimeoutMs?: number;
  /** Sessions without any request for this long end (default 30 minutes). */
  readonly sessionIdleMs?: number;
  /** How long the server may take to answer the bridge's initialize (default 3 minutes). */
  readonly handshakeTimeoutMs?: number;
  readonly clientInfo?: { name: string; version: string };
  readonly onLog?: (level: "debug" | "warn", message: string) => void;
}

interface ServerInit {
  readonly protocolVersion: string;
  readonly capabilities: Record<string, unknown>;
  readonly serverInfo: unknown;
  readonly instructions?: string;
}

/** Server requests the bridge routes, and the client capability each needs. */
const capabilityFor: Readonly<Record<string, keyof ClientSession["capabilities"] | undefined>> = {
  "sampling/createMessage": "sampling",
  "elicitation/create": "elicitation",
  "roots/list": "roots",
};

export class StdioBridge {
  readonly #sessions = new Map<string, ClientSession>();
  readonly #inFlight = new Map<number, InFlight>();
  readonly #internal = new Map<number, (message: JsonRpcMessage) => void>();
  readonly #serverRequests = new Map<string | number, ClientSession>();
  readonly #subscribers = new SubscriberCounts();
  readonly #options: BridgeOptions;
  #channel: ServerChannel | undefined;
  #nextId = 1;
  #init: Promise<ServerInit> | undefined;
  #serverLogLevel: LogLevel | undefined;
  #lastActive: ClientSession | undefined;
  #closedReason: string | undefined;
  #sweeper: ReturnType<typeof setInterval> | undefined;

  constructor(options: BridgeOptions = {}) {
    this.#options = options;
  }

  /** Connects to the server and performs the one handshake it will see. */
  start(channel: ServerChannel): Promise<ServerInit> {
    this.#channel = channel;
    this.#sweeper = setInterval(() => this.#sweep(), 1_000);
    this.#sweeper.unref?.();
    void channel.closed.then(() => this.close("the MCP server exited"));
    this.#init = new Promise<ServerInit>((resolve, reject) => {
      const id = this.#nextId++;
      void channel.closed.then(() => reject(new Error("the MCP server exited during initialize")));
      // Generous: npx/uvx download the package before the server can answer.
      const timer = setTimeout(
        () => reject(new Error("the MCP server did not answer initialize within 3 minutes")),
        this.#options.handshakeTimeoutMs ?? 180_000,
      );
      timer.unref?.();
      this.#internal.set(id, (message) => {
        clearTimeout(timer);
        if (message.error) return reject(new Error(`the MCP server refused initialize: ${message.error.message}`));
        const result = message.result as ServerInit;
        channel.send({ jsonrpc: "2.0", method: "notifications/initialized" });
        resolve(result);
      });
      channel.send({
        jsonrpc: "2.0",
        id,
        method: "initialize",
        params: {
          protocolVersion: latestProtocolVersion,
          capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } },
          clientInfo: this.#options.clientInfo ?? { name: "mcpmgr", version: "0" },
        },
      });
    });
    return this.#init;
  }

  get isClosed(): boolean {
    return this.#closedReason !== undefined;
  }

  createSession(): ClientSession {
    const session = new ClientSession(randomUUID());
    this.#sessions.set(session.id, session);
    return session;
  }

  getSession(id: string): ClientSession | undefined {
    const session = this.#sessions.get(id);
    return session && !session.ended ? session : undefined;
  }

  /** Requests forwarded to the server and not yet answered (tests and diagnostics). */
  get inFlightCount(): number {
    return this.#inFlight.size;
  }

  get sessionCount(): number {
    return this.#sessions.size;
  }

  endSession(session: ClientSession): void {
    if (!this.#sessions.delete(session.id)) return;
    for (const [id, flight] of this.#inFlight) {
      if (flight.session !== session) continue;
      this.#inFlight.delete(id);
      this.#send({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: id, reason: "client session ended" },
      });
    }
    for (const [id, owner] of this.#serverRequests) {
      if (owner === session) this.#answerServer(id, JsonRpcCode.internalError, "the client session ended");
    }
    for (const uri of session.subscriptions) this.#unsubscribe(uri);
    if (this.#lastActive === session) this.#lastActive = undefined;
    for (const sink of session.openSinks) sink.abort?.();
    session.end();
    if (session.logLevel !== undefined) this.#syncServerLogLevel();
  }

  /** Ends every session and fails every request: the server is gone. */
  close(reason: string): void {
    if (this.#closedReason !== undefined) return;
    this.#closedReason = reason;
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    for (const [id, flight] of this.#inFlight) {
      this.#inFlight.delete(id);
      flight.sink.send(errorResponse(flight.clientId, JsonRpcCode.internalError, reason));
    }
    for (const session of [...this.#sessions.values()]) this.endSession(session);
  }

  /** A message from a client session; requests are answered through `sink`. */
  handle(session: ClientSession, message: JsonRpcMessage, sink: Sink): void | Promise<void> {
    session.touch();
    this.#lastActive = session;
    const kind = kindOf(message);
    if (kind === "request") return this.#clientRequest(session, message, sink);
    if (kind === "notification") return this.#clientNotification(session, message);
    if (kind === "response") return this.#clientResponse(session, message);
    sink.send(errorResponse(null, JsonRpcCode.invalidRequest, "not a JSON-RPC 2.0 message"));
  }

  #clientRequest(session: ClientSession, message: JsonRpcMessage, sink: Sink): void | Promise<void> {
    const id = message.id as JsonRpcId;
    if (this.#closedReason !== undefined) {
      sink.send(errorResponse(id, JsonRpcCode.internalError, this.#closedReason));
      return;
    }
    if (message.method === "initialize") return this.#initializeSession(session, message, sink);
    if (!session.initialized) {
      sink.send(errorResponse(id, JsonRpcCode.invalidRequest, "the session is not initialized: send initialize first"));
      return;
    }
    switch (message.method) {
      case "ping":
        sink.send({ jsonrpc: "2.0", id, result: {} });
        return;
      case "logging/setLevel": {
        const level = message.params?.level;
        if (!isLogLevel(level)) {
          sink.send(errorResponse(id, JsonRpcCode.invalidParams, "params.level must be an RFC 5424 level name"));
          return;
        }
        session.logLevel = level;
        // The server logs at the most verbose level any session wants; the bridge filters per session.
        const wanted = mostVerboseLevel(this.#sessions.values()) as LogLevel;
        if (wanted === this.#serverLogLevel) {
          sink.send({ jsonrpc: "2.0", id, result: {} });
          return;
        }
        this.#serverLogLevel = wanted;
        message.params = { ...message.params, level: wanted };
        break;
      }
      case "resources/subscribe": {
        const uri = String(message.params?.uri ?? "");
        const first = !session.subscriptions.has(uri) && this.#subscribers.add(uri);
        session.subscriptions.add(uri);
        if (!first) {
          sink.send({ jsonrpc: "2.0", id, result: {} });
          return;
        }
        break;
      }
      case "resources/unsubscribe": {
        const uri = String(message.params?.uri ?? "");
        const last = session.subscriptions.delete(uri) && this.#unsubscribe(uri, false);
        if (!last) {
          sink.send({ jsonrpc: "2.0", id, result: {} });
          return;
        }
        break;
      }
    }
    this.#forward(session, message, sink);
  }

  #forward(session: ClientSession, message: JsonRpcMessage, sink: Sink): void {
    const upstreamId = this.#nextId++;
    const clientToken = progressTokenOf(message);
    if (clientToken !== undefined) {
      // The token is ours now; the server's progress notifications carry it back to this request.
      message.params = { ...message.params, _meta: { ...message.params?._meta, progressToken: upstreamId } };
    }
    this.#inFlight.set(upstreamId, {
      session,
      clientId: message.id as JsonRpcId,
      sink,
      method: message.method as string,
      deadline: performance.now() + (this.#options.requestTimeoutMs ?? 600_000),
      clientToken,
    });
    session.openSinks.add(sink);
    message.id = upstreamId;
    this.#send(message);
  }

  async #initializeSession(session: ClientSession, message: JsonRpcMessage, sink: Sink): Promise<void> {
    const requested = String(message.params?.protocolVersion ?? "");
    session.protocolVersion = isSupportedProtocolVersion(requested) ? requested : latestProtocolVersion;
    session.capabilities = (message.params?.capabilities as ClientSession["capabilities"]) ?? {};
    let init: ServerInit;
    try {
      init = await (this.#init as Promise<ServerInit>);
    } catch (err) {
      sink.send(
        errorResponse(
          message.id as JsonRpcId,
          JsonRpcCode.internalError,
          err instanceof Error ? err.message : "initialize failed",
        ),
      );
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

  #clientNotification(session: ClientSession, message: JsonRpcMessage): void {
    if (message.method === "notifications/initialized") return; // the server had ours
    if (message.method === "notifications/cancelled") {
      const clientId = message.params?.requestId;
      for (const [upstreamId, flight] of this.#inFlight) {
        if (flight.session !== session || flight.clientId !== clientId) continue;
        this.#finishFlight(upstreamId, flight);
        // No response will come: end the POST that carried the request, unless it waits for others.
        if (!session.openSinks.has(flight.sink)) flight.sink.abort?.();
        message.params = { ...message.params, requestId: upstreamId };
        this.#send(message);
      }
      return;
    }
    this.#send(message);
  }

  #clientResponse(session: ClientSession, message: JsonRpcMessage): void {
    const id = message.id as string | number;
    // Only the session the server asked may answer.
    if (this.#serverRequests.get(id) !== session) return;
    this.#serverRequests.delete(id);
    this.#send(message);
  }

  /** A message from the server. */
  onServerMessage = (raw: unknown): void => {
    const message = raw as JsonRpcMessage;
    const kind = kindOf(message);
    if (kind === "response") return this.#serverResponse(message);
    if (kind === "request") return this.#serverRequest(message);
    if (kind === "notification") return this.#serverNotification(message);
    this.#options.onLog?.("warn", "the MCP server sent something that is not JSON-RPC 2.0; skipped");
  };

  #serverResponse(message: JsonRpcMessage): void {
    const id = message.id as number;
    const internal = this.#internal.get(id);
    if (internal !== undefined) {
      this.#internal.delete(id);
      internal(message);
      return;
    }
    const flight = this.#inFlight.get(id);
    if (flight === undefined) return; // cancelled, timed out, or its session ended
    this.#finishFlight(id, flight);
    message.id = flight.clientId;
    flight.sink.send(message);
  }

  #finishFlight(upstreamId: number, flight: InFlight): void {
    this.#inFlight.delete(upstreamId);
    let stillOpen = false;
    for (const other of this.#inFlight.values()) if (other.sink === flight.sink) stillOpen = true;
    if (!stillOpen) flight.session.openSinks.delete(flight.sink);
  }

  #serverRequest(message: JsonRpcMessage): void {
    const id = message.id as string | number;
    const target = this.#attribute(message.method as string);
    if (target === "ambiguous") {
      return this.#answerServer(
        id,
        JsonRpcCode.internalError,
        "several client sessions are busy with this server, so mcpmgr cannot tell which one this request is for",
      );
    }
    if (target === undefined) {
      if (message.method === "ping") return this.#send({ jsonrpc: "2.0", id, result: {} });
      return this.#answerServer(id, JsonRpcCode.internalError, "no client session can take this request");
    }
    const needed = capabilityFor[message.method as string];
    if (needed !== undefined && !target.session.capabilities[needed]) {
      return this.#answerServer(id, JsonRpcCode.methodNotFound, `the client does not support ${message.method}`);
    }
    this.#serverRequests.set(id, target.session);
    if (!target.sink.send(message)) {
      this.#serverRequests.delete(id);
      this.#answerServer(id, JsonRpcCode.internalError, "the client's stream closed");
    }
  }

  /**
   * Which session a server→client request belongs to. A stdio server cannot say. When
   * the requests in flight all come from one session, it is that session's (on its
   * newest stream); when several sessions are waiting on the server, guessing could hand
   * one client another's prompt, so the request is refused instead ("ambiguous"). With
   * nothing in flight (roots/list after roots/list_changed, pings) it goes to the session
   * that spoke last, on its GET stream.
   */
  #attribute(method: string): { session: ClientSession; sink: Sink } | "ambiguous" | undefined {
    let found: InFlight | undefined;
    for (const flight of this.#inFlight.values()) {
      if (found !== undefined && flight.session !== found.session) return "ambiguous";
      if (found === undefined || flight.sink.canStream) found = flight;
    }
    if (found !== undefined) {
      const sink = found.sink.canStream ? found.sink : found.session.bestSink();
      return sink === undefined ? undefined : { session: found.session, sink };
    }
    const session = this.#lastActive;
    const sink = session?.bestSink();
    if (session === undefined || sink === undefined) return undefined;
    if (method !== "ping" && method !== "roots/list" && session.openSinks.size === 0 && !session.standalone)
      return undefined;
    return { session, sink };
  }

  #serverNotification(message: JsonRpcMessage): void {
    routeServerNotification(message, {
      sessions: this.#sessions.values(),
      inFlight: this.#inFlight,
      serverRequests: this.#serverRequests,
    });
  }

  #send(message: JsonRpcMessage): void {
    if (this.#closedReason === undefined) this.#channel?.send(message);
  }

  #answerServer(id: string | number, code: number, text: string): void {
    this.#serverRequests.delete(id);
    this.#send(errorResponse(id, code, text));
  }

  /** Drops a subscription; forwards the unsubscribe when it was the last. */
  #unsubscribe(uri: string, sendToServer = true): boolean {
    const last = this.#subscribers.remove(uri);
    if (last && sendToServer)
      this.#send({ jsonrpc: "2.0", id: this.#ignoredId(), method: "resources/unsubscribe", params: { uri } });
    return last;
  }

  #ignoredId(): number {
    const id = this.#nextId++;
    this.#internal.set(id, () => {});
    return id;
  }

  #syncServerLogLevel(): void {
    const wanted = mostVerboseLevel(this.#sessions.values());
    if (wanted === undefined || wanted === this.#serverLogLevel) return;
    this.#serverLogLevel = wanted;
    this.#send({ jsonrpc: "2.0", id: this.#ignoredId(), method: "logging/setLevel", params: { level: wanted } });
  }

  /** Times out stuck requests and expires idle sessions. */
  #sweep(): void {
    const now = performance.now();
    for (const [id, flight] of this.#inFlight) {
      if (flight.deadline > now) continue;
      this.#finishFlight(id, flight);
      this.#send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason: "timed out" } });
      flight.sink.send(
        errorResponse(
          flight.clientId,
          JsonRpcCode.internalError,
          `the MCP server did not answer ${flight.method} in time`,
        ),
      );
    }
    const idle = this.#options.sessionIdleMs ?? 30 * 60_000;
    for (const session of [...this.#sessions.values()]) {
      if (now - session.lastActivity > idle) this.endSession(session);
    }
  }
}
