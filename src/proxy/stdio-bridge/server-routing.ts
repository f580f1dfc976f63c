/**
 * Where traffic the server starts goes. A stdio server addresses its one client; the
 * bridge decides per kind which clients that means.
 *
 * Notifications:
 *   progress           → the request that carries the token (tokens are bridge-unique)
 *   cancelled          → the client the cancelled server request was sent to
 *   message (logging)  → while one client alone is waiting on the server, that client (the
 *                        log is most likely about its work): a session unless its level
 *                        excludes it, a 2026-07-28 request only if it asked for a log level.
 *                        Otherwise only the sessions that asked for logging (never everyone).
 *                        A line no client takes (several clients waiting and none asked, a
 *                        level that excludes it) goes to `unroutedLog`, the workload's log:
 *                        guessing a caller could hand one caller another's data, and dropping
 *                        it would lose what the server said.
 *   resources/updated  → the sessions and listen streams subscribed to that URI
 *   list_changed       → every session, and the listen streams that asked for that kind
 * Each session receives it on one stream only: its newest open one. 2026-07-28 requests get
 * only what concerns them (progress, their logs), never another client's news. A modern
 * server tags listen-stream notifications with the listen request's id, which is ours: they
 * go to that stream.
 *
 * Server requests (sampling, elicitation, roots) carry no reference to the request they
 * serve, so they go to the one client waiting on the server for work that may ask
 * something (attribute); with several such clients, guessing could hand one client
 * another's prompt, so the request is refused.
 */
import type { Flight } from "./flight.ts";
import type { ListenHub } from "./listen.ts";
import type { ServerListens } from "./server-listens.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import { logLevelRank } from "./messages.ts";
import { metaKey } from "./modern.ts";
import type { ClientSession } from "./session.ts";
import type { Sink } from "./sink.ts";

export interface NotificationRoutes {
  readonly sessions: Iterable<ClientSession>;
  readonly flights: ReadonlyMap<number, Flight>;
  readonly serverRequests: Map<string | number, ClientSession>;
  readonly listens: ListenHub;
  /** The bridge's own listen streams at a modern server, on behalf of the sessions. */
  readonly serverListens: ServerListens;
  /** A log message no client took (the workload's log keeps it). */
  readonly unroutedLog?: ((message: JsonRpcMessage) => void) | undefined;
}

export function routeServerNotification(message: JsonRpcMessage, routes: NotificationRoutes): void {
  const params = message.params ?? {};
  const subscription = params._meta?.[metaKey.subscriptionId];
  if (typeof subscription === "number") {
    const flight = routes.flights.get(subscription);
    if (flight?.listen) {
      const meta = { ...params._meta, [metaKey.subscriptionId]: flight.clientId };
      flight.sink?.send({ ...message, params: { ...params, _meta: meta } });
      return;
    }
    if (!routes.serverListens.owns(subscription)) return;
    // The bridge listened for the sessions: what they subscribed to, or every list change.
    const { [metaKey.subscriptionId]: _id, ...meta } = params._meta ?? {};
    const plain = { ...message, params: { ...params, _meta: meta } };
    if (message.method === "notifications/resources/updated") {
      const uri = String(params.uri);
      for (const session of routes.sessions) if (session.subscriptions.has(uri)) session.bestSink()?.send(plain);
    } else if (message.method !== "notifications/subscriptions/acknowledged")
      for (const session of routes.sessions) session.bestSink()?.send(plain);
    return;
  }
  switch (message.method) {
    case "notifications/progress": {
      const flight = routes.flights.get(params.progressToken as number);
      if (flight === undefined || flight.clientToken === undefined || flight.sink === undefined) return;
      const progress = { ...message, params: { ...params, progressToken: flight.clientToken } };
      if (!flight.sink.send(progress) && !flight.modern) flight.session.bestSink()?.send(progress);
      return;
    }
    case "notifications/cancelled": {
      const requestId = params.requestId as string | number;
      const owner = routes.serverRequests.get(requestId);
      if (owner === undefined) return;
      routes.serverRequests.delete(requestId);
      owner.bestSink()?.send(message);
      return;
    }
    case "notifications/message": {
      if (!routeLog(message, routes)) routes.unroutedLog?.(message);
      return;
    }
    case "notifications/resources/updated": {
      const uri = String(params.uri);
      for (const session of routes.sessions) if (session.subscriptions.has(uri)) session.bestSink()?.send(message);
      routes.listens.deliver(message);
      return;
    }
    default:
      for (const session of routes.sessions) session.bestSink()?.send(message);
      routes.listens.deliver(message);
  }
}

/** Delivers a server's log message to the clients it concerns (see above); whether any took it. */
function routeLog(message: JsonRpcMessage, routes: NotificationRoutes): boolean {
  const rank = logLevelRank(message.params?.level);
  const admits = (level: string | undefined) => level === undefined || rank >= logLevelRank(level);
  const busy = onlyWaiting(routes.flights.values(), () => true);
  if (busy !== undefined && "flight" in busy) {
    const flight = busy.flight;
    return (
      flight.session.logLevel !== undefined && admits(flight.session.logLevel) && flight.sink?.send(message) === true
    );
  }
  if (busy !== undefined) return admits(busy.session.logLevel) && busy.session.bestSink()?.send(message) === true;
  let taken = false;
  for (const session of routes.sessions)
    if (session.logLevel !== undefined && admits(session.logLevel) && session.bestSink()?.send(message)) taken = true;
  return taken;
}

/** Who the server's work is for: one waiting session or one 2026-07-28 request. */
type Waiting = { session: ClientSession } | { flight: Flight };

/** The one client waiting on the server (several or none: undefined). */
function onlyWaiting(flights: Iterable<Flight>, counts: (flight: Flight) => boolean): Waiting | undefined {
  let found: Waiting | undefined;
  for (const flight of flights) {
    if (flight.listen || !counts(flight)) continue;
    const sameSession = found !== undefined && "session" in found && found.session === flight.session;
    if (found !== undefined && (flight.modern || !sameSession)) return undefined;
    found = flight.modern ? { flight } : { session: flight.session };
  }
  return found;
}

/**
 * Requests during which a server may ask its client something (lists and the like never
 * do). A call parked between input rounds is not counted: its server work waits for the
 * answers it already asked for, and counting it would make every other client's server
 * requests ambiguous for as long as it stays parked.
 */
function mayAsk(flight: Flight): boolean {
  return flight.sink !== undefined && !flight.method.endsWith("/list") && flight.method !== "server/discover";
}

export type Attribution = { session: ClientSession; sink: Sink } | { flight: Flight } | "ambiguous" | undefined;

/**
 * Which client a server→client request belongs to. With one client waiting for work that
 * may ask, that client's: a session gets it on the stream of its request (or its newest),
 * a 2026-07-28 request gets it as an input round. With nothing in flight (roots/list after
 * roots/list_changed, pings) it goes to the session that spoke last, on its GET stream.
 */
export function attribute(
  method: string,
  flights: Iterable<Flight>,
  lastActive: ClientSession | undefined,
): Attribution {
  let several = false;
  let found: Waiting | undefined;
  let newest: Flight | undefined;
  for (const flight of flights) {
    if (flight.listen || !mayAsk(flight)) continue;
    const next: Waiting = flight.modern ? { flight } : { session: flight.session };
    if (found === undefined) found = next;
    else if (!("session" in found && "session" in next && found.session === next.session)) several = true;
    if (!flight.modern && (newest === undefined || flight.sink?.canStream)) newest = flight;
  }
  if (several) return "ambiguous";
  if (found !== undefined) {
    if ("flight" in found) return found;
    const sink = newest?.sink?.canStream ? newest.sink : found.session.bestSink();
    return sink === undefined ? undefined : { session: found.session, sink };
  }
  const session = lastActive;
  const sink = session?.bestSink();
  if (session === undefined || sink === undefined) return undefined;
  if (method !== "ping" && method !== "roots/list" && session.openSinks.size === 0 && !session.standalone)
    return undefined;
  return { session, sink };
}
