/**
 * 2025-era sessions in front of a 2026-07-28 server, which knows no sessions: each request
 * carries the session's context as `_meta` (translation.ts); a call the server answers with an
 * InputRequiredResult is asked of the client the 2025 way and retried with the answers
 * (session-rounds.ts); and the bridge keeps its own `subscriptions/listen` streams so the
 * sessions still get list changes and the resource updates they subscribed to
 * (server-listens.ts). What such a server no longer has (ping, logging/setLevel,
 * resources/subscribe) is answered before it gets here (session-requests.ts).
 */
import { JsonRpcCode } from "../jsonrpc.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import type { Flight } from "./flight.ts";
import { errorResponse } from "./messages.ts";
import { mayRequireInput } from "./modern.ts";
import { ServerListens } from "./server-listens.ts";
import type { ClientSession } from "./session.ts";
import { SessionRounds } from "./session-rounds.ts";
import type { Sink } from "./sink.ts";
import { withSessionMeta } from "./translation.ts";

export interface ModernServerSessionsHost {
  /** Forwards a session's request to the server. */
  forward(session: ClientSession, message: JsonRpcMessage, sink: Sink): Flight | undefined;
  finish(flight: Flight): void;
  send(message: JsonRpcMessage): void;
  /** A request id whose answer the bridge ignores. */
  ignoredId(): number;
  /** Who the bridge says it is, when configured. */
  readonly clientInfo: { name: string; version: string } | undefined;
}

export class ModernServerSessions {
  readonly #rounds: SessionRounds;
  readonly #listens: ServerListens;
  readonly #host: ModernServerSessionsHost;

  constructor(host: ModernServerSessionsHost) {
    this.#host = host;
    this.#rounds = new SessionRounds({
      retry: (flight, inputResponses, requestState) => {
        const call = flight.retry as JsonRpcMessage;
        const sink = flight.sink;
        host.finish(flight);
        if (sink === undefined) return;
        const params = { ...call.params, inputResponses, ...(requestState !== undefined ? { requestState } : {}) };
        const next = host.forward(flight.session, { ...call, params }, sink);
        if (next) next.retry = call;
      },
      fail: (flight, text) => {
        const sink = flight.sink;
        host.finish(flight);
        sink?.send(errorResponse(flight.clientId, JsonRpcCode.internalError, text));
      },
    });
    this.#listens = new ServerListens({
      send: (message) => host.send(message),
      ignoredId: () => host.ignoredId(),
      clientInfo: host.clientInfo ?? { name: "mcpmgr", version: "0" },
    });
  }

  /** The bridge's own listen streams, whose notifications are for the sessions. */
  get listens(): ServerListens {
    return this.#listens;
  }

  /** Sessions expect list_changed notifications; a modern server sends them only on listen streams. */
  start(capabilities: Record<string, unknown>): void {
    this.#listens.lists(capabilities);
  }

  /** A session's request, with its context added; its input rounds are asked of the client, then it is retried. */
  request(session: ClientSession, message: JsonRpcMessage, sink: Sink): void {
    const withMeta = withSessionMeta(message, session, this.#host.clientInfo);
    const flight = this.#host.forward(session, withMeta, sink);
    if (flight && mayRequireInput(withMeta.method as string)) flight.retry = withMeta;
  }

  /** The server answered a session's call: true when it asked for input and the rounds took it over. */
  response(flight: Flight, message: JsonRpcMessage): boolean {
    if (flight.retry === undefined) return false;
    if (this.#rounds.take(flight, message.result)) return true;
    this.#rounds.finished(flight);
    return false;
  }

  /** A client's response: true when it answered one of the bridge's input requests. */
  answer(session: ClientSession, message: JsonRpcMessage): boolean {
    return this.#rounds.answer(session, message);
  }

  /** Forgets what a call had pending (it ended). */
  drop(flight: Flight): void {
    this.#rounds.drop(flight);
  }

  /** Starts or stops listening for updates of a resource some session subscribed to. */
  listenAtServer(uri: string, on: boolean): void {
    this.#listens.resource(uri, on);
  }
}
