/**
 * Requests the server makes of its client (sampling, elicitation, roots, ping). Each goes to
 * the client whose work it serves (server-routing.ts, `attribute`): a session gets it on one
 * of its streams, a 2026-07-28 request gets it as an input round. Only the session that was
 * asked may answer, and one that ends leaves nothing unanswered at the server.
 */
import { JsonRpcCode } from "../jsonrpc.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import type { Flight } from "./flight.ts";
import { capabilityFor } from "./input-rounds.ts";
import { errorResponse } from "./messages.ts";
import { attribute } from "./server-routing.ts";
import type { ClientSession } from "./session.ts";

export interface ServerRequestsHost {
  /** Sends to the server. */
  send(message: JsonRpcMessage): void;
  flights(): Iterable<Flight>;
  /** The session that spoke last (for requests made while nothing is in flight). */
  lastActive(): ClientSession | undefined;
  /** A request made while serving a 2026-07-28 call: it becomes an input round. */
  inputRound(flight: Flight, message: JsonRpcMessage): void;
}

export class ServerRequests {
  /** Requests sent to a session's client, by the server's id. */
  readonly owners = new Map<string | number, ClientSession>();
  readonly #host: ServerRequestsHost;

  constructor(host: ServerRequestsHost) {
    this.#host = host;
  }

  /** A request from the server, to the client it is for (or refused). */
  route(message: JsonRpcMessage): void {
    const id = message.id as string | number;
    const method = message.method as string;
    const target = attribute(method, this.#host.flights(), this.#host.lastActive());
    if (target === "ambiguous") {
      return this.refuse(
        id,
        JsonRpcCode.internalError,
        "several clients are waiting on this server, so mcpmgr cannot tell which one this request is for",
      );
    }
    if (target === undefined) {
      if (method === "ping") return this.#host.send({ jsonrpc: "2.0", id, result: {} });
      return this.refuse(id, JsonRpcCode.internalError, "no client can take this request");
    }
    if ("flight" in target) return this.#host.inputRound(target.flight, message);
    const needed = capabilityFor(method);
    if (needed !== undefined && !target.session.capabilities[needed]) {
      return this.refuse(id, JsonRpcCode.methodNotFound, `the client does not support ${method}`);
    }
    this.owners.set(id, target.session);
    if (!target.sink.send(message)) {
      this.owners.delete(id);
      this.refuse(id, JsonRpcCode.internalError, "the client's stream closed");
    }
  }

  /** A session's response: passed to the server when it answers what that session was asked. */
  answer(session: ClientSession, message: JsonRpcMessage): void {
    const id = message.id as string | number;
    if (this.owners.get(id) !== session) return;
    this.owners.delete(id);
    this.#host.send(message);
  }

  /** Answers a server request with an error. */
  refuse(id: string | number, code: number, text: string): void {
    this.owners.delete(id);
    this.#host.send(errorResponse(id, code, text));
  }

  /** The session ended: what it was asked and did not answer fails at the server. */
  sessionEnded(session: ClientSession): void {
    for (const [id, owner] of this.owners)
      if (owner === session) this.refuse(id, JsonRpcCode.internalError, "the client session ended");
  }
}
