/**
 * Input rounds the other way round: a 2026-07-28 server answers a session client's
 * (2025-era) call with an InputRequiredResult, which such a client does not know. The bridge
 * asks the client each embedded request the 2025 way (its own sampling/elicitation/roots
 * request on the call's stream), collects the answers, and retries the call at the server
 * with `inputResponses` and the server's `requestState`, until the server completes it. The
 * client sees one call that asked it some questions, as it would of a 2025 server.
 */
import type { Flight } from "./flight.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import type { ClientSession } from "./session.ts";

interface Pending {
  readonly flight: Flight;
  readonly key: string;
}

/** Rounds one call may take before the bridge gives up on it (a server that never completes). */
const maxRounds = 16;

export interface SessionRoundHost {
  /** Re-sends the call with the client's answers (a new upstream request for the same client request). */
  retry(flight: Flight, inputResponses: Record<string, unknown>, requestState: unknown): void;
  /** Ends the call with an error to its client. */
  fail(flight: Flight, message: string): void;
}

interface Collecting {
  readonly answers: Record<string, unknown>;
  remaining: number;
  readonly requestState: unknown;
}

export class SessionRounds {
  readonly #pending = new Map<string, Pending>();
  readonly #collecting = new Map<Flight, Collecting>();
  readonly #rounds = new Map<JsonRpcMessage, number>();
  readonly #host: SessionRoundHost;
  #next = 1;

  constructor(host: SessionRoundHost) {
    this.#host = host;
  }

  /** True when `result` is an input round this module took over for the flight's client. */
  take(flight: Flight, result: unknown): boolean {
    const asked = result as { resultType?: unknown; inputRequests?: unknown; requestState?: unknown } | undefined;
    if (asked?.resultType !== "input_required" || flight.retry === undefined) return false;
    const rounds = (this.#rounds.get(flight.retry) ?? 0) + 1;
    this.#rounds.set(flight.retry, rounds);
    if (rounds > maxRounds) {
      this.#host.fail(flight, `the MCP server asked for input more than ${maxRounds} times`);
      return true;
    }
    const requests = Object.entries(
      (asked.inputRequests ?? {}) as Record<string, { method?: unknown; params?: unknown }>,
    );
    const collecting: Collecting = { answers: {}, remaining: requests.length, requestState: asked.requestState };
    this.#collecting.set(flight, collecting);
    if (requests.length === 0) return this.#complete(flight, collecting);
    const sink = flight.sink?.canStream ? flight.sink : flight.session.bestSink();
    for (const [key, request] of requests) {
      const id = `mcpmgr-input-${this.#next++}`;
      this.#pending.set(id, { flight, key });
      const method = String(request.method);
      const params = forSessionClient(method, request.params, id);
      const sent = sink?.send({ jsonrpc: "2.0", id, method, ...(params !== undefined ? { params } : {}) });
      if (!sent) {
        this.drop(flight);
        this.#host.fail(flight, "the client has no open stream to be asked for input");
        return true;
      }
    }
    return true;
  }

  /** A client's response; true when it answered one of the bridge's input requests (to that session). */
  answer(session: ClientSession, message: JsonRpcMessage): boolean {
    const pending = typeof message.id === "string" ? this.#pending.get(message.id) : undefined;
    if (pending === undefined) return false;
    if (pending.flight.session !== session) return true; // only the session asked may answer
    this.#pending.delete(message.id as string);
    const collecting = this.#collecting.get(pending.flight);
    if (collecting === undefined) return true;
    if (message.error !== undefined) {
      this.drop(pending.flight);
      this.#host.fail(pending.flight, `the client could not answer: ${message.error.message}`);
      return true;
    }
    collecting.answers[pending.key] = message.result;
    if (--collecting.remaining === 0) this.#complete(pending.flight, collecting);
    return true;
  }

  /** Forgets a call (it ended, or its session did). */
  drop(flight: Flight): void {
    this.#collecting.delete(flight);
    for (const [id, pending] of this.#pending) if (pending.flight === flight) this.#pending.delete(id);
  }

  /** The call is over for good: its round count goes too. */
  finished(flight: Flight): void {
    this.drop(flight);
    if (flight.retry !== undefined) this.#rounds.delete(flight.retry);
  }

  #complete(flight: Flight, collecting: Collecting): true {
    this.#collecting.delete(flight);
    this.#host.retry(flight, collecting.answers, collecting.requestState);
    return true;
  }
}

/**
 * An embedded request's params as a 2025-era client must receive them. A URL-mode elicitation has no
 * `elicitationId` in 2026-07-28 (the server keeps its own correlation in requestState), while 2025-11-25
 * requires one and its clients refuse the request without it: the bridge's own request id serves.
 */
function forSessionClient(method: string, params: unknown, id: string): Record<string, unknown> | undefined {
  if (typeof params !== "object" || params === null) return undefined;
  const given = params as Record<string, unknown>;
  if (method !== "elicitation/create" || given.mode !== "url" || typeof given.elicitationId === "string") return given;
  return { ...given, elicitationId: id };
}
