/**
 * A client request the bridge forwarded to the server and that is not over yet. A
 * request from a 2026-07-28 client to an older server may outlive its HTTP request: when
 * the server asks the client something (sampling, elicitation, roots), the bridge answers
 * the HTTP request with an InputRequiredResult and the flight waits, parked, for the
 * client's retry to bring the answers (see input-rounds.ts).
 */
import type { JsonRpcId } from "../jsonrpc.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import { progressTokenOf } from "./messages.ts";
import type { ClientSession } from "./session.ts";
import type { Sink } from "./sink.ts";

/** A server→client request waiting for the client's answer inside an input round. */
export interface AwaitedInput {
  readonly serverId: string | number;
  readonly method: string;
  readonly params: unknown;
}

/** Multi-round-trip state of a modern client's request to an older server. */
export interface InputRounds {
  /** Digest of the call's parameters and the caller, which a retry must match. */
  readonly digest: string;
  readonly principal: string;
  /** Rounds answered so far; a state for an older round is refused. */
  round: number;
  /** Keys handed out per method, so every input request of the call has its own key. */
  readonly keyCounts: Map<string, number>;
  /** Server requests the client has yet to answer, by key. */
  readonly awaited: Map<string, AwaitedInput>;
  /** The input responses the current round brought, for requests the server makes next. */
  offered: Record<string, unknown> | undefined;
  /** Capabilities the server needed that the client did not declare. */
  readonly missing: Set<string>;
  /** Collects the server requests of one burst into one InputRequiredResult. */
  gather: ReturnType<typeof setTimeout> | undefined;
}

export interface Flight {
  readonly upstreamId: number;
  session: ClientSession;
  clientId: JsonRpcId;
  /** Where the answer goes; undefined while parked between input rounds. */
  sink: Sink | undefined;
  readonly method: string;
  deadline: number;
  clientToken: string | number | undefined;
  /** A 2026-07-28 request (no session): answered in that revision's shapes. */
  readonly modern: boolean;
  /** A subscriptions/listen stream: it lasts as long as the client keeps it. */
  readonly listen: boolean;
  rounds: InputRounds | undefined;
  /** A session's call to a modern server, as forwarded: retried with the client's input (session-rounds.ts). */
  retry?: JsonRpcMessage;
}

/**
 * A client request about to be forwarded under the bridge-wide `upstreamId`, and the message
 * the server gets: that id, and in place of the client's progress token the same number (so
 * the server's progress notifications find this request). The client's message is not changed.
 */
export function newFlight(
  upstreamId: number,
  session: ClientSession,
  message: JsonRpcMessage,
  sink: Sink,
  modern: boolean,
  deadline: number,
): { flight: Flight; outgoing: JsonRpcMessage } {
  const clientToken = progressTokenOf(message);
  let outgoing: JsonRpcMessage = { ...message, id: upstreamId };
  if (clientToken !== undefined) {
    outgoing = {
      ...outgoing,
      params: { ...outgoing.params, _meta: { ...outgoing.params?._meta, progressToken: upstreamId } },
    };
  }
  const flight: Flight = {
    upstreamId,
    session,
    clientId: message.id as JsonRpcId,
    sink,
    method: message.method as string,
    deadline,
    clientToken,
    modern,
    listen: message.method === "subscriptions/listen",
    rounds: undefined,
  };
  return { flight, outgoing };
}
