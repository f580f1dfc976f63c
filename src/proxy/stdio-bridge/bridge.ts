/**
 * The stdio bridge: many HTTP clients on one stdio MCP server.
 *
 * The server sees a single client. Every client request is forwarded under a fresh
 * bridge-wide numeric id (and a fresh progress token), so identical ids from different
 * clients can never meet; the server's answer is routed back by that id alone.
 *
 * Two kinds of client meet here: sessions (2025-11-25 and older: initialize, then requests
 * on the session) and 2026-07-28 requests, each standing alone with its context in `_meta`
 * (a "stateless" ClientSession that lives as long as its POST). The server is of one of two
 * eras too (handshake.ts): a modern server gets modern requests as they are; an older one
 * is kept behind one initialised session and the bridge speaks 2026-07-28 for it — it
 * answers server/discover, shapes results (result-shape.ts), turns the server's own
 * requests into input rounds (input-rounds.ts) and serves subscriptions/listen
 * (listen.ts). Server-initiated traffic is routed by what it refers to (server-routing.ts).
 */
import { randomUUID } from "node:crypto";
import { JsonRpcCode, type JsonRpcId } from "../jsonrpc.ts";
import { newFlight, type Flight } from "./flight.ts";
import { handshake, type ServerInit } from "./handshake.ts";
import { capabilityFor, InputRoundKeeper, invalidInputResponses, newRounds } from "./input-rounds.ts";
import { ListenHub } from "./listen.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import { errorResponse, kindOf, type LogLevel } from "./messages.ts";
import { isRemovedMethod, mayRequireInput, modernProtocolVersions } from "./modern.ts";
import { paramsDigest } from "./request-state.ts";
import { shapeForModernClient } from "./result-shape.ts";
import { answerLocally, initializeSession } from "./session-requests.ts";
import { SessionRounds } from "./session-rounds.ts";
import { ServerListens } from "./server-listens.ts";
import { discoverResult, forOlderServer, missingCapabilityError, withSessionMeta } from "./translation.ts";
import type { ServerChannel } from "./server-channel.ts";
import { attribute, routeServerNotification } from "./server-routing.ts";
import { mostVerboseLevel, SubscriberCounts } from "./shared-interest.ts";
import { ClientSession } from "./session.ts";
import type { Sink } from "./sink.ts";

export type { Flight } from "./flight.ts";
export type { ServerInit } from "./handshake.ts";

export interface BridgeOptions {
  /** How long a request may wait for the server's answer (default 10 minutes). */
  readonly requestTimeoutMs?: number;
  /** Sessions without any request for this long end (default 30 minutes). */
  readonly sessionIdleMs?: number;
  /** How long the server may take to answer the bridge's initialize (default 3 minutes). */
  readonly handshakeTimeoutMs?: number;
  /** How long a call waits, parked, for the client's retry with its input (default 5 minutes). */
  readonly inputTimeoutMs?: number;
  /** Sessions open at once; past it a new one is refused (default 1,000, MCPMGR_MAX_SESSIONS). */
  readonly maxSessions?: number;
  readonly clientInfo?: { name: string; version: string };
  readonly onLog?: (level: "debug" | "warn", message: string) => void;
}

export class StdioBridge {
  readonly #sessions = new Map<string, ClientSession>();
  readonly #flights = new Map<number, Flight>();
  /** The session each flight was counted in (ClientSession.inFlight), whatever it is attached to later. */
  readonly #countedIn = new WeakMap<Flight, ClientSession>();
  readonly #internal = new Map<number, (message: JsonRpcMessage) => void>();
  /** Server requests sent to a session's client, by the server's id. */
  readonly #serverRequests = new Map<string | number, ClientSession>();
  readonly #subscribers = new SubscriberCounts();
  readonly #listens: ListenHub;
  readonly #rounds: InputRoundKeeper;
  readonly #sessionRounds: SessionRounds;
  readonly #serverListens: ServerListens;
  readonly #options: BridgeOptions;
  #channel: ServerChannel | undefined;
  #nextId = 1;
  #init: Promise<ServerInit> | undefined;
  #server: ServerInit | undefined;
  #serverLogLevel: LogLevel | undefined;
  #lastActive: ClientSession | undefined;
  #closedReason: string | undefined;
  #sweeper: ReturnType<typeof setInterval> | undefined;

  constructor(options: BridgeOptions = {}) {
    this.#options = options;
    this.#rounds = new InputRoundKeeper({
      send: (message) => this.#send(message),
      refuseServer: (id, code, text) => this.#answerServer(id, code, text),
      flight: (upstreamId) => this.#flights.get(upstreamId),
      detach: (flight, sink) => this.#detach(flight, sink),
      requestTimeoutMs: options.requestTimeoutMs ?? 600_000,
      inputTimeoutMs: options.inputTimeoutMs ?? 5 * 60_000,
    });
    this.#sessionRounds = new SessionRounds({
      retry: (flight, inputResponses, requestState) => {
        const call = flight.retry as JsonRpcMessage;
        const sink = flight.sink;
        this.#finishFlight(flight.upstreamId, flight);
        if (sink === undefined) return;
        const params = { ...call.params, inputResponses, ...(requestState !== undefined ? { requestState } : {}) };
        const next = this.#forward(flight.session, { ...call, params }, sink);
        if (next) next.retry = call;
      },
      fail: (flight, text) => {
        const sink = flight.sink;
        this.#finishFlight(flight.upstreamId, flight);
        sink?.send(errorResponse(flight.clientId, JsonRpcCode.internalError, text));
      },
    });
    this.#serverListens = new ServerListens({
      send: (message) => this.#send(message),
      ignoredId: () => this.#ignoredId(),
      clientInfo: options.clientInfo ?? { name: "mcpmgr", version: "0" },
    });
    this.#listens = new ListenHub({
      subscribe: (uri) => {
        if (this.#subscribers.add(uri))
          this.#send({ jsonrpc: "2.0", id: this.#ignoredId(), method: "resources/subscribe", params: { uri } });
      },
      unsubscribe: (uri) => this.#unsubscribe(uri),
    });
  }

  /** Connects to the server and performs the one handshake it will see. */
  start(channel: ServerChannel): Promise<ServerInit> {
    this.#channel = channel;
    this.#sweeper = setInterval(() => this.#sweep(), 1_000);
    this.#sweeper.unref?.();
    void channel.closed.then(() => this.close("the MCP server exited"));
    this.#init = handshake(
      {
        request: (message) =>
          new Promise((resolve) => {
            const id = this.#nextId++;
            this.#internal.set(id, resolve);
            channel.send({ ...message, id });
          }),
        notify: (message) => channel.send(message),
        closed: channel.closed,
      },
      this.#options.clientInfo ?? { name: "mcpmgr", version: "0" },
      this.#options.handshakeTimeoutMs ?? 180_000,
    ).then((init) => {
      this.#server = init;
      // Sessions expect list_changed notifications; a modern server sends them only on listen streams.
      if (init.era === "modern") this.#serverListens.lists(init.capabilities);
      return init;
    });
    return this.#init;
  }

  get isClosed(): boolean {
    return this.#closedReason !== undefined;
  }

  /** What the server said about itself, once the handshake is done. */
  get server(): ServerInit | undefined {
    return this.#server;
  }

  /** The 2026-07-28 versions modern clients may use here. */
  get modernVersions(): readonly string[] {
    return this.#server?.era === "modern" ? this.#server.supportedVersions : modernProtocolVersions;
  }

  /** Whether a new session would exceed the limit (the front end answers 503). */
  get sessionsFull(): boolean {
    return this.#sessions.size >= (this.#options.maxSessions ?? defaultMaxSessions);
  }

  /** A session bound to `principal` (the caller that opened it, "" without authentication). */
  createSession(principal = ""): ClientSession {
    const session = new ClientSession(randomUUID());
    session.principal = principal;
    this.#sessions.set(session.id, session);
    return session;
  }

  /** The context of one 2026-07-28 request; never listed among the sessions. */
  createStateless(
    protocolVersion: string,
    capabilities: ClientSession["capabilities"],
    logLevel: LogLevel | undefined,
    principal: string,
  ): ClientSession {
    const session = new ClientSession(randomUUID(), true);
    session.initialized = true;
    session.protocolVersion = protocolVersion;
    session.capabilities = capabilities;
    session.logLevel = logLevel;
    session.principal = principal;
    return session;
  }

  /**
   * The session `id`, if it is open and `principal` opened it: another caller who learnt the
   * id gets nothing, exactly as for an id that never existed.
   */
  getSession(id: string, principal = ""): ClientSession | undefined {
    const session = this.#sessions.get(id);
    return session && !session.ended && session.principal === principal ? session : undefined;
  }

  /** Requests forwarded to the server and not yet answered (tests and diagnostics). */
  get inFlightCount(): number {
    return this.#flights.size;
  }

  get sessionCount(): number {
    return this.#sessions.size;
  }

  endSession(session: ClientSession): void {
    if (session.stateless) {
      // Its flights may live on, parked for an input round; the POST's own sinks are over.
      session.end();
      return;
    }
    if (!this.#sessions.delete(session.id)) return;
    const sinks = [...session.openSinks];
    for (const [id, flight] of this.#flights) {
      if (flight.session !== session) continue;
      this.#cancelUpstream(id, flight, "client session ended");
    }
    for (const [id, owner] of this.#serverRequests) {
      if (owner === session) this.#answerServer(id, JsonRpcCode.internalError, "the client session ended");
    }
    for (const uri of session.subscriptions) this.#unsubscribe(uri);
    if (this.#lastActive === session) this.#lastActive = undefined;
    for (const sink of sinks) sink.abort?.();
    session.end();
    if (session.logLevel !== undefined) this.#syncServerLogLevel();
  }

  /**
   * The client left before its answer (a 2026-07-28 request's stream closed): that is its
   * cancellation, so the server hears notifications/cancelled and the work stops.
   */
  abandon(sink: Sink): void {
    for (const [id, flight] of this.#flights)
      if (flight.sink === sink) this.#cancelUpstream(id, flight, "the client closed its stream");
  }

  /** Ends every session and fails every request: the server is gone (or mcpmgr stops). */
  close(reason: string): void {
    if (this.#closedReason !== undefined) return;
    this.#closedReason = reason;
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    for (const [id, flight] of this.#flights) {
      this.#flights.delete(id);
      this.#uncount(flight);
      if (flight.listen) continue;
      flight.sink?.send(errorResponse(flight.clientId, JsonRpcCode.internalError, reason));
    }
    this.#listens.closeAll();
    for (const session of [...this.#sessions.values()]) this.endSession(session);
  }

  /** A message from a client; requests are answered through `sink`. */
  handle(session: ClientSession, message: JsonRpcMessage, sink: Sink): void | Promise<void> {
    session.touch();
    if (!session.stateless) this.#lastActive = session;
    const kind = kindOf(message);
    if (kind === "request") return this.#clientRequest(session, message, sink);
    if (kind === "notification") return this.#clientNotification(session, message);
    if (kind === "response") return this.#clientResponse(session, message);
    sink.send(errorResponse(null, JsonRpcCode.invalidRequest, "not a JSON-RPC 2.0 message"));
  }

  /** A 2026-07-28 subscriptions/listen on an older server: served by the bridge. */
  listen(message: JsonRpcMessage, sink: Sink & { onClose?(listener: () => void): void }): void {
    this.#listens.open(message, sink, this.#server?.capabilities ?? {});
  }

  #clientRequest(session: ClientSession, message: JsonRpcMessage, sink: Sink): void | Promise<void> {
    const id = message.id as JsonRpcId;
    if (this.#closedReason !== undefined) {
      sink.send(errorResponse(id, JsonRpcCode.internalError, this.#closedReason));
      return;
    }
    if (session.stateless) return this.#modernRequest(session, message, sink);
    if (message.method === "initialize")
      return initializeSession(session, message, sink, this.#init as Promise<ServerInit>);
    if (!session.initialized) {
      sink.send(errorResponse(id, JsonRpcCode.invalidRequest, "the session is not initialized: send initialize first"));
      return;
    }
    const modernServer = this.#server?.era === "modern";
    const forwarded = answerLocally(session, message, sink, {
      subscribers: this.#subscribers,
      sessions: this.#sessions.values(),
      modernServer,
      serverLogLevel: this.#serverLogLevel,
      setServerLogLevel: (level) => {
        this.#serverLogLevel = level;
      },
      lastUnsubscribe: (uri) => this.#unsubscribe(uri, false),
      listenAtServer: (uri, on) => this.#serverListens.resource(uri, on),
    });
    if (forwarded === undefined) return;
    message = forwarded;
    // A modern server knows no sessions: each request carries the session's context.
    if (!modernServer) {
      this.#forward(session, message, sink);
      return;
    }
    message = withSessionMeta(message, session, this.#options.clientInfo);
    const flight = this.#forward(session, message, sink);
    // Its input rounds are asked of the client the 2025 way, then the call is retried.
    if (flight && mayRequireInput(message.method as string)) flight.retry = message;
  }

  /** A 2026-07-28 request, its envelope already checked by the front end. */
  #modernRequest(session: ClientSession, message: JsonRpcMessage, sink: Sink): void {
    const id = message.id as JsonRpcId;
    const method = message.method as string;
    const server = this.#server;
    if (server?.era === "modern") {
      this.#forward(session, message, sink);
      return;
    }
    // The bridge speaks 2026-07-28 for an older server from here on.
    if (method === "server/discover") {
      sink.send({ jsonrpc: "2.0", id, result: discoverResult(this.#server as ServerInit) });
      return;
    }
    if (isRemovedMethod(method) || method === "subscriptions/listen") {
      sink.send(errorResponse(id, JsonRpcCode.methodNotFound, `Method not found: ${method}`));
      return;
    }
    const params = message.params ?? {};
    const invalid = invalidInputResponses(params.inputResponses);
    if (invalid) {
      sink.send(errorResponse(id, JsonRpcCode.invalidParams, `Invalid params: ${invalid}`));
      return;
    }
    if (params.requestState !== undefined) return this.#rounds.resume(session, message, sink);
    const level = session.logLevel;
    if (level !== undefined && (this.#serverLogLevel === undefined || rank(level) < rank(this.#serverLogLevel))) {
      this.#serverLogLevel = level;
      this.#send({ jsonrpc: "2.0", id: this.#ignoredId(), method: "logging/setLevel", params: { level } });
    }
    const flight = this.#forward(session, { ...message, params: forOlderServer(params) }, sink, true);
    if (flight && mayRequireInput(method))
      flight.rounds = newRounds(
        paramsDigest(params),
        session.principal,
        params.inputResponses as Record<string, unknown> | undefined,
      );
  }

  #forward(
    session: ClientSession,
    message: JsonRpcMessage,
    sink: Sink,
    modern = session.stateless,
  ): Flight | undefined {
    const { flight, outgoing } = newFlight(
      this.#nextId++,
      session,
      message,
      sink,
      modern,
      performance.now() + (this.#options.requestTimeoutMs ?? 600_000),
    );
    // Registered only once it is on its way: a message that cannot be sent must leave nothing behind.
    try {
      this.#send(outgoing);
    } catch (err) {
      sink.send(
        errorResponse(
          flight.clientId,
          JsonRpcCode.invalidRequest,
          `Invalid Request: ${err instanceof Error ? err.message : "the message cannot be forwarded"}`,
        ),
      );
      return undefined;
    }
    this.#flights.set(flight.upstreamId, flight);
    session.inFlight++;
    this.#countedIn.set(flight, session);
    session.openSinks.add(sink);
    return flight;
  }

  #clientNotification(session: ClientSession, message: JsonRpcMessage): void {
    if (message.method === "notifications/initialized") return; // the server had ours
    if (message.method === "notifications/cancelled") {
      const clientId = message.params?.requestId;
      for (const [upstreamId, flight] of this.#flights) {
        if (flight.session !== session || flight.clientId !== clientId) continue;
        const sink = flight.sink;
        this.#finishFlight(upstreamId, flight);
        // No response will come: end the POST that carried the request, unless it waits for others.
        if (sink && !session.openSinks.has(sink)) sink.abort?.();
        this.#send({ ...message, params: { ...message.params, requestId: upstreamId } });
      }
      return;
    }
    if (session.stateless && this.#server?.era !== "modern") return; // no client notifications in 2026-07-28
    this.#send(message);
  }

  #clientResponse(session: ClientSession, message: JsonRpcMessage): void {
    const id = message.id as string | number;
    if (this.#sessionRounds.answer(session, message)) return;
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

  /** The server's answer to `id` was too large to read: its request fails with a clear error. */
  failOversized = (bytes: number, id: string | number | undefined): void => {
    this.#options.onLog?.("warn", `the MCP server sent a message of ${bytes} bytes, over the limit; dropped`);
    const flight = typeof id === "number" ? this.#flights.get(id) : undefined;
    if (flight === undefined) return;
    const sink = flight.sink;
    this.#finishFlight(flight.upstreamId, flight);
    sink?.send(
      errorResponse(
        flight.clientId,
        JsonRpcCode.internalError,
        `the MCP server's answer (${bytes} bytes) is larger than mcpmgr accepts; raise MCPMGR_MAX_MESSAGE_BYTES to allow it`,
      ),
    );
  };

  #serverResponse(message: JsonRpcMessage): void {
    const id = message.id as number;
    const internal = this.#internal.get(id);
    if (internal !== undefined) {
      this.#internal.delete(id);
      internal(message);
      return;
    }
    const flight = this.#flights.get(id);
    if (flight === undefined) return; // cancelled, timed out, or its session ended
    if (flight.retry !== undefined) {
      if (this.#sessionRounds.take(flight, message.result)) return;
      this.#sessionRounds.finished(flight);
    }
    const sink = flight.sink;
    this.#finishFlight(id, flight);
    let answer: JsonRpcMessage = { ...message, id: flight.clientId };
    if (flight.modern && this.#server?.era !== "modern") {
      const missing = flight.rounds?.missing;
      // The call failed for want of a capability the client did not declare: the revision names that error.
      const failed =
        answer.error !== undefined || (answer.result as { isError?: unknown } | undefined)?.isError === true;
      answer =
        failed && missing !== undefined && missing.size > 0
          ? missingCapabilityError(flight.clientId, missing)
          : shapeForModernClient(answer, flight.method, this.#server?.serverInfo);
    }
    sink?.send(answer);
  }

  #uncount(flight: Flight): void {
    const counted = this.#countedIn.get(flight);
    if (counted === undefined) return;
    this.#countedIn.delete(flight);
    counted.inFlight--;
  }

  #finishFlight(upstreamId: number, flight: Flight): void {
    if (this.#flights.delete(upstreamId)) this.#uncount(flight);
    this.#rounds.release(flight);
    this.#sessionRounds.drop(flight);
    if (flight.sink !== undefined) this.#detach(flight, flight.sink);
  }

  /** The sink no longer waits for this flight: it leaves its session's open sinks when no other flight uses it. */
  #detach(flight: Flight, sink: Sink): void {
    for (const other of this.#flights.values()) if (other !== flight && other.sink === sink) return;
    flight.session.openSinks.delete(sink);
  }

  /** Forgets a flight and tells the server to stop working on it. */
  #cancelUpstream(upstreamId: number, flight: Flight, reason: string): void {
    this.#finishFlight(upstreamId, flight);
    this.#send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: upstreamId, reason } });
  }

  #serverRequest(message: JsonRpcMessage): void {
    const id = message.id as string | number;
    const method = message.method as string;
    const target = attribute(method, this.#flights.values(), this.#lastActive);
    if (target === "ambiguous") {
      return this.#answerServer(
        id,
        JsonRpcCode.internalError,
        "several clients are waiting on this server, so mcpmgr cannot tell which one this request is for",
      );
    }
    if (target === undefined) {
      if (method === "ping") return this.#send({ jsonrpc: "2.0", id, result: {} });
      return this.#answerServer(id, JsonRpcCode.internalError, "no client can take this request");
    }
    if ("flight" in target) return this.#rounds.serverRequest(target.flight, message);
    const needed = capabilityFor(method);
    if (needed !== undefined && !target.session.capabilities[needed]) {
      return this.#answerServer(id, JsonRpcCode.methodNotFound, `the client does not support ${method}`);
    }
    this.#serverRequests.set(id, target.session);
    if (!target.sink.send(message)) {
      this.#serverRequests.delete(id);
      this.#answerServer(id, JsonRpcCode.internalError, "the client's stream closed");
    }
  }

  #serverNotification(message: JsonRpcMessage): void {
    routeServerNotification(message, {
      sessions: this.#sessions.values(),
      flights: this.#flights,
      serverRequests: this.#serverRequests,
      listens: this.#listens,
      serverListens: this.#serverListens,
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
    if (this.#server?.era === "modern") return;
    const wanted = mostVerboseLevel(this.#sessions.values());
    if (wanted === undefined || wanted === this.#serverLogLevel) return;
    this.#serverLogLevel = wanted;
    this.#send({ jsonrpc: "2.0", id: this.#ignoredId(), method: "logging/setLevel", params: { level: wanted } });
  }

  /** Times out stuck requests and expires idle sessions. */
  #sweep(): void {
    const now = performance.now();
    for (const [id, flight] of this.#flights) {
      if (flight.deadline > now || flight.listen) continue;
      const sink = flight.sink;
      this.#cancelUpstream(id, flight, "timed out");
      sink?.send(
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

const defaultMaxSessions = 1_000;

const levelOrder = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
function rank(level: LogLevel): number {
  return levelOrder.indexOf(level);
}
