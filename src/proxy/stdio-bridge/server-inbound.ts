/**
 * What comes in from the server, dispatched: an answer goes back to the client whose request it
 * answers (under that client's id, translated for a 2026-07-28 client of an older server); the
 * server's requests and notifications are routed (server-requests.ts, server-routing.ts); an
 * answer too large to read fails its request with a clear error instead of leaving it to time out.
 */
import { answerTooLargeText } from "../answer-limit.ts";
import { JsonRpcCode } from "../jsonrpc.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import type { FlightTable } from "./flight-table.ts";
import type { ListenHub } from "./listen.ts";
import { errorResponse, kindOf } from "./messages.ts";
import type { ModernServerSessions } from "./modern-server-sessions.ts";
import type { OlderServerTranslation } from "./older-server.ts";
import type { ParamHeaderChecks } from "./param-headers.ts";
import type { ServerRequests } from "./server-requests.ts";
import { routeServerNotification } from "./server-routing.ts";
import type { ClientSession } from "./session.ts";

export interface ServerInboundParts {
  readonly flights: FlightTable;
  readonly serverRequests: ServerRequests;
  readonly listens: ListenHub;
  readonly olderServer: OlderServerTranslation;
  readonly modernServer: ModernServerSessions;
  /** Learns `x-mcp-header` declarations from the server's tool lists, forgets them when the list changes. */
  readonly paramHeaders: ParamHeaderChecks;
  readonly sessions: () => Iterable<ClientSession>;
  /** Whether the server speaks 2026-07-28 (known once the handshake is done). */
  readonly modernServerEra: () => boolean;
  readonly onLog?: (level: "debug" | "warn", message: string) => void;
  /** A server's log message no client took. */
  readonly onUnroutedLog?: ((message: JsonRpcMessage) => void) | undefined;
}

/** The bridge's handler for each message the server sends. */
export function serverMessageHandler(parts: ServerInboundParts): (raw: unknown) => void {
  return (raw) => {
    const message = raw as JsonRpcMessage;
    const kind = kindOf(message);
    if (kind === "response") return serverResponse(parts, message);
    if (kind === "request") return parts.serverRequests.route(message);
    if (kind === "notification") {
      if (message.method === "notifications/tools/list_changed") parts.paramHeaders.forget();
      return routeServerNotification(message, {
        sessions: parts.sessions(),
        flights: parts.flights.byId,
        serverRequests: parts.serverRequests.owners,
        listens: parts.listens,
        serverListens: parts.modernServer.listens,
        unroutedLog: parts.onUnroutedLog,
      });
    }
    parts.onLog?.("warn", "the MCP server sent something that is not JSON-RPC 2.0; skipped");
  };
}

function serverResponse(parts: ServerInboundParts, message: JsonRpcMessage): void {
  const { flights } = parts;
  if (flights.takeInternal(message)) return;
  const flight = flights.get(message.id as number);
  if (flight === undefined) return; // cancelled, timed out, or its session ended
  if (flight.method === "tools/list" && message.result !== undefined) parts.paramHeaders.learn(message.result);
  if (parts.modernServer.response(flight, message)) return;
  const sink = flight.sink;
  flights.finish(flight);
  let answer: JsonRpcMessage = { ...message, id: flight.clientId };
  if (flight.modern && !parts.modernServerEra()) answer = parts.olderServer.answer(flight, answer);
  sink?.send(answer);
}

/** The server's answer to `id` was too large to read: its request fails with a clear error. */
export function oversizedHandler(parts: ServerInboundParts): (bytes: number, id: string | number | undefined) => void {
  return (bytes, id) => {
    parts.onLog?.("warn", `the MCP server sent a message of ${bytes} bytes, over the limit; dropped`);
    const flight = typeof id === "number" ? parts.flights.get(id) : undefined;
    if (flight === undefined) return;
    const sink = flight.sink;
    parts.flights.finish(flight);
    sink?.send(errorResponse(flight.clientId, JsonRpcCode.internalError, answerTooLargeText(`${bytes} bytes`)));
  };
}
