/**
 * Where a notification from the server goes. A stdio server addresses its one
 * client; the bridge decides per kind which sessions that means:
 *   progress           → the request that carries the token (tokens are bridge-unique)
 *   cancelled          → the session the cancelled server request was sent to
 *   message (logging)  → while only one session has requests in flight, that session (the
 *                        log is most likely about its work); otherwise every session —
 *                        each only if its logging/setLevel admits the level
 *   resources/updated  → the sessions subscribed to that URI
 *   anything else (list_changed, ...) → every session
 * Each session receives it on one stream only: its newest open one.
 */
import { logLevelRank, type JsonRpcMessage } from "./messages.ts";
import type { ClientSession, InFlight } from "./session.ts";

export interface NotificationRoutes {
  readonly sessions: Iterable<ClientSession>;
  readonly inFlight: ReadonlyMap<number, InFlight>;
  readonly serverRequests: Map<string | number, ClientSession>;
}

export function routeServerNotification(message: JsonRpcMessage, routes: NotificationRoutes): void {
  const params = message.params ?? {};
  switch (message.method) {
    case "notifications/progress": {
      const flight = routes.inFlight.get(params.progressToken as number);
      if (flight === undefined || flight.clientToken === undefined) return;
      message.params = { ...params, progressToken: flight.clientToken };
      if (!flight.sink.send(message)) flight.session.bestSink()?.send(message);
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
      const rank = logLevelRank(params.level);
      const busy = onlyBusySession(routes.inFlight);
      for (const session of busy ? [busy] : routes.sessions) {
        if (session.logLevel === undefined || rank >= logLevelRank(session.logLevel)) session.bestSink()?.send(message);
      }
      return;
    }
    case "notifications/resources/updated": {
      const uri = String(params.uri);
      for (const session of routes.sessions) if (session.subscriptions.has(uri)) session.bestSink()?.send(message);
      return;
    }
    default:
      for (const session of routes.sessions) session.bestSink()?.send(message);
  }
}

/** The one session with requests in flight, if exactly one has any. */
function onlyBusySession(inFlight: ReadonlyMap<number, InFlight>): ClientSession | undefined {
  let found: ClientSession | undefined;
  for (const flight of inFlight.values()) {
    if (found !== undefined && flight.session !== found) return undefined;
    found = flight.session;
  }
  return found;
}
