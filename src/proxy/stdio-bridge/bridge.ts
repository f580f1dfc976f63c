/**
 * The stdio bridge: many HTTP clients on one stdio MCP server.
 *
 * The server sees a single client. Every client request is forwarded under a fresh
 * bridge-wide numeric id (and a fresh progress token), so identical ids from different
 * clients can never meet; the server's answer is routed back by that id alone
 * (flight-table.ts).
 *
 * Two kinds of client meet here: sessions (2025-11-25 and older: initialize, then requests
 * on the session) and 2026-07-28 requests, each standing alone with its context in `_meta`
 * (a "stateless" ClientSession that lives as long as its POST; the sessions are kept in
 * session-table.ts, bounded and expired there). The server is of one of two
 * eras too (handshake.ts): a modern server gets modern requests as they are and sessions
 * translated (modern-server-sessions.ts); an older one is kept behind one initialised
 * session and the bridge speaks 2026-07-28 for it (older-server.ts, listen.ts).
 * What the server sends is dispatched by server-inbound.ts; its own requests and
 * notifications are routed by what they refer to (server-routing.ts, server-requests.ts). What the
 * sessions want from the server together (subscriptions, a log level): shared-interest.ts.
 * Nothing here depends on stdio: the server is any ServerChannel.
 */
import { JsonRpcCode, type JsonRpcId } from "../jsonrpc.ts";
import { FlightTable } from "./flight-table.ts";
import { handshake, type ServerInit } from "./handshake.ts";
import { ListenHub } from "./listen.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import { errorResponse, kindOf } from "./messages.ts";
import { type EdgeRefusal, modernProtocolVersions } from "./modern.ts";
import { ModernServerSessions } from "./modern-server-sessions.ts";
import { OlderServerTranslation } from "./older-server.ts";
import { ParamHeaderChecks } from "./param-headers.ts";
import { answerLocally, initializeSession } from "./session-requests.ts";
import { ServerNotReading, type ServerChannel } from "./server-channel.ts";
import { ServerRequests } from "./server-requests.ts";
import { oversizedHandler, serverMessageHandler } from "./server-inbound.ts";
import { ServerInterest } from "./shared-interest.ts";
import { droppedStreamText } from "../event-stream.ts";
import type { ClientSession } from "./session.ts";
import { SessionTable } from "./session-table.ts";
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
  /** A 2026-07-28 server without initialize (an HTTP remote): server/discover alone must show that revision. */
  readonly modernServerOnly?: boolean;
  readonly onLog?: (level: "debug" | "warn", message: string) => void;
  /**
   * A log message of the server's (`notifications/message`) that no client took: several were
   * waiting on the server and none asked for logging, say (server-routing.ts). A workload writes it
   * to its log; without this it is dropped.
   */
  readonly onUnroutedLog?: (message: JsonRpcMessage) => void;
}

export class StdioBridge {
  readonly #sessions: SessionTable;
  readonly #flights: FlightTable;
  readonly #serverRequests: ServerRequests;
  /** Subscriptions and the log level the server was asked for, on behalf of every client. */
  readonly #interest: ServerInterest;
  readonly #listens: ListenHub;
  /** 2026-07-28 clients of an older server. */
  readonly #olderServer: OlderServerTranslation;
  /** 2025-era sessions of a 2026-07-28 server. */
  readonly #modernServer: ModernServerSessions;
  /** `Mcp-Param-*` headers of 2026-07-28 calls, checked against the server's x-mcp-header declarations. */
  readonly #paramHeaders: ParamHeaderChecks;
  readonly #options: BridgeOptions;
  #channel: ServerChannel | undefined;
  #init: Promise<ServerInit> | undefined;
  #server: ServerInit | undefined;
  #lastActive: ClientSession | undefined;
  #closedReason: string | undefined;
  #sweeper: ReturnType<typeof setInterval> | undefined;
  /** A message from the server (server-inbound.ts). */
  readonly onServerMessage: (raw: unknown) => void;
  /** The server's answer to `id` was too large to read: its request fails with a clear error. */
  readonly failOversized: (bytes: number, id: string | number | undefined) => void;

  constructor(options: BridgeOptions = {}) {
    this.#options = options;
    const requestTimeoutMs = options.requestTimeoutMs ?? 600_000;
    this.#flights = new FlightTable({
      send: (message) => this.#send(message),
      // Throws ServerNotReading: the client's request fails with it (flight-table.ts forward).
      sendRequest: (message) => {
        if (this.#closedReason === undefined) this.#channel?.send(message);
      },
      onFinish: (flight) => {
        this.#olderServer.release(flight);
        this.#modernServer.drop(flight);
      },
      requestTimeoutMs,
    });
    this.#interest = new ServerInterest((method, params) =>
      this.#send({ jsonrpc: "2.0", id: this.#flights.ignoredId(), method, params }),
    );
    this.#sessions = new SessionTable({
      maxSessions: options.maxSessions,
      sessionIdleMs: options.sessionIdleMs,
      flights: this.#flights,
      end: (session) => this.endSession(session),
    });
    this.#olderServer = new OlderServerTranslation({
      send: (message) => this.#send(message),
      refuseServer: (id, code, text) => this.#serverRequests.refuse(id, code, text),
      flight: (upstreamId) => this.#flights.get(upstreamId),
      detach: (flight, sink) => this.#flights.detach(flight, sink),
      forward: (session, message, sink) => this.#flights.forward(session, message, sink, true),
      raiseLogLevel: (level) => this.#interest.raiseLogLevel(level),
      server: () => this.#server,
      requestTimeoutMs,
      inputTimeoutMs: options.inputTimeoutMs ?? 5 * 60_000,
    });
    this.#modernServer = new ModernServerSessions({
      forward: (session, message, sink) => this.#flights.forward(session, message, sink, session.stateless),
      finish: (flight) => this.#flights.finish(flight),
      send: (message) => this.#send(message),
      ignoredId: () => this.#flights.ignoredId(),
      clientInfo: options.clientInfo,
    });
    this.#serverRequests = new ServerRequests({
      send: (message) => this.#send(message),
      flights: () => this.#flights.values(),
      lastActive: () => this.#lastActive,
      inputRound: (flight, message) => this.#olderServer.serverRequest(flight, message),
    });
    this.#paramHeaders = new ParamHeaderChecks({
      request: (message) => this.#flights.request(message, (outgoing) => this.#send(outgoing)),
      server: () => this.#server,
      clientInfo: options.clientInfo,
      timeoutMs: Math.min(requestTimeoutMs, 60_000),
      onLog: options.onLog,
    });
    this.#listens = new ListenHub({
      subscribe: (uri) => this.#interest.subscribe(uri),
      unsubscribe: (uri) => this.#interest.unsubscribe(uri),
    });
    const inbound = {
      flights: this.#flights,
      serverRequests: this.#serverRequests,
      listens: this.#listens,
      olderServer: this.#olderServer,
      modernServer: this.#modernServer,
      paramHeaders: this.#paramHeaders,
      sessions: () => this.#sessions.values(),
      modernServerEra: () => this.#server?.era === "modern",
      onLog: options.onLog,
      onUnroutedLog: options.onUnroutedLog,
    };
    this.onServerMessage = serverMessageHandler(inbound);
    this.failOversized = oversizedHandler(inbound);
  }

  /** Connects to the server and performs the one handshake it will see. */
  start(channel: ServerChannel): Promise<ServerInit> {
    this.#channel = channel;
    this.#sweeper = setInterval(() => this.#sweep(), 1_000);
    this.#sweeper.unref?.();
    void channel.closed.then(() => this.close("the MCP server exited"));
    this.#init = handshake(
      {
        request: (message) => this.#flights.request(message, (outgoing) => channel.send(outgoing)),
        notify: (message) => channel.send(message),
        closed: channel.closed,
      },
      this.#options.clientInfo ?? { name: "mcpmgr", version: "0" },
      this.#options.handshakeTimeoutMs ?? 180_000,
      this.#options.modernServerOnly !== true,
    ).then((init) => {
      this.#server = init;
      if (init.era === "modern") this.#modernServer.start(init.capabilities);
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

  /**
   * Whether a new session may open: below the limit, or after ending the least recently used idle
   * session (session-table.ts); false when every session is in use (the front end answers 503).
   */
  roomForSession(): boolean {
    return this.#sessions.makeRoom();
  }

  /** A session bound to `principal` (the caller that opened it, "" without authentication). */
  createSession(principal = ""): ClientSession {
    return this.#sessions.open(principal);
  }

  /**
   * The session `id`, if it is open and `principal` opened it: another caller who learnt the
   * id gets nothing, exactly as for an id that never existed.
   */
  getSession(id: string, principal = ""): ClientSession | undefined {
    return this.#sessions.get(id, principal);
  }

  /** Whether the session `id` goes on, whoever it belongs to (getSession answers for its owner only). */
  hasSession(id: string): boolean {
    return this.#sessions.has(id);
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
    if (!this.#sessions.delete(session)) return;
    const sinks = [...session.openSinks];
    for (const flight of this.#flights.values())
      if (flight.session === session) this.#flights.cancel(flight, "client session ended");
    this.#serverRequests.sessionEnded(session);
    for (const uri of session.subscriptions) this.#interest.unsubscribe(uri);
    if (this.#lastActive === session) this.#lastActive = undefined;
    for (const sink of sinks) sink.abort?.();
    session.end();
    // A modern server takes the level per request: there is no level of its own to lower.
    if (session.logLevel !== undefined && this.#server?.era !== "modern")
      this.#interest.syncLogLevel(this.#sessions.values());
  }

  /**
   * The client left before its answer (a 2026-07-28 request's stream closed): that is its
   * cancellation, so the server hears notifications/cancelled and the work stops.
   */
  abandon(sink: Sink): void {
    for (const flight of this.#flights.values())
      if (flight.sink === sink) this.#flights.cancel(flight, "the client closed its stream");
  }

  /**
   * A client's stream was dropped because it stopped reading (event-stream.ts): one warning, since
   * the client only sees its connection reset and the session or request ends with it.
   */
  streamDropped(bytes: number): void {
    this.#options.onLog?.("warn", droppedStreamText(bytes));
  }

  /** Ends every session and fails every request: the server is gone (or mcpmgr stops). */
  close(reason: string): void {
    if (this.#closedReason !== undefined) return;
    this.#closedReason = reason;
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    for (const flight of this.#flights.clear())
      if (!flight.listen) flight.sink?.send(errorResponse(flight.clientId, JsonRpcCode.internalError, reason));
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

  /** Whether a 2026-07-28 tools/call's `Mcp-Param-*` headers agree with its arguments (param-headers.ts). */
  checkParamHeaders(
    headers: Headers,
    message: JsonRpcMessage,
  ): EdgeRefusal | undefined | Promise<EdgeRefusal | undefined> {
    return this.#paramHeaders.check(headers, message);
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
      subscribers: this.#interest.subscribers,
      sessions: this.#sessions.values(),
      modernServer,
      serverLogLevel: this.#interest.logLevel,
      setServerLogLevel: (level) => {
        this.#interest.logLevel = level;
      },
      lastUnsubscribe: (uri) => this.#interest.unsubscribe(uri, false),
      listenAtServer: (uri, on) => this.#modernServer.listenAtServer(uri, on),
    });
    if (forwarded === undefined) return;
    // A modern server knows no sessions: each request carries the session's context.
    if (modernServer) this.#modernServer.request(session, forwarded, sink);
    else this.#flights.forward(session, forwarded, sink, false);
  }

  /** A 2026-07-28 request, its envelope already checked by the front end. */
  #modernRequest(session: ClientSession, message: JsonRpcMessage, sink: Sink): void {
    if (this.#server?.era === "modern") this.#flights.forward(session, message, sink, true);
    // The bridge speaks 2026-07-28 for an older server from here on.
    else this.#olderServer.request(session, message, sink);
  }

  #clientNotification(session: ClientSession, message: JsonRpcMessage): void {
    if (message.method === "notifications/initialized") return; // the server had ours
    if (message.method === "notifications/cancelled") return this.#flights.cancelledByClient(session, message);
    if (session.stateless && this.#server?.era !== "modern") return; // no client notifications in 2026-07-28
    this.#send(message);
  }

  #clientResponse(session: ClientSession, message: JsonRpcMessage): void {
    if (!this.#modernServer.answer(session, message)) this.#serverRequests.answer(session, message);
  }

  /** Anything but a client's request: a server that is not reading its input loses it, with a warning. */
  #send(message: JsonRpcMessage): void {
    if (this.#closedReason !== undefined) return;
    try {
      this.#channel?.send(message);
    } catch (err) {
      if (!(err instanceof ServerNotReading)) throw err;
      this.#options.onLog?.("warn", `${err.message}: a message to it was dropped`);
    }
  }

  /** Times out stuck requests and expires idle sessions (session-table.ts). */
  #sweep(): void {
    const now = performance.now();
    for (const flight of this.#flights.timeOut(now)) {
      const text = `the MCP server did not answer ${flight.method} in time`;
      flight.sink?.send(errorResponse(flight.clientId, JsonRpcCode.internalError, text));
    }
    this.#sessions.expireIdle(now);
  }
}
