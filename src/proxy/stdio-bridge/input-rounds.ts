/**
 * Multi-round-trip requests (2026-07-28) in front of an older server. Such a server asks
 * its client things with its own JSON-RPC requests (sampling/createMessage,
 * elicitation/create, roots/list) while it works on a call; a modern client cannot receive
 * those. So the bridge collects the requests the server makes for one call, answers the
 * client with an InputRequiredResult naming each under a key, and parks the server's work;
 * the client's retry brings `inputResponses` under the same keys and the sealed
 * `requestState`, and the bridge hands each answer to the waiting server request. Keys are
 * given in order per method ("elicitation", "elicitation-2", ...), so a fresh call that
 * already carries the answers (a client that knows the flow) runs through without a round.
 */
import { JsonRpcCode, type JsonRpcId } from "../jsonrpc.ts";
import type { AwaitedInput, Flight, InputRounds } from "./flight.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import { errorResponse, progressTokenOf } from "./messages.ts";
import { paramsDigest, RequestStateSeal } from "./request-state.ts";
import type { ClientCapabilities, ClientSession } from "./session.ts";
import type { Sink } from "./sink.ts";
import { isObject } from "../../objects.ts";

/** Server requests of one burst (a handler asking several things at once) share one round. */
const gatherMs = 15;

/** What the keeper needs from the bridge. */
export interface RoundHost {
  send(message: JsonRpcMessage): void;
  /** Answers a server request with an error. */
  refuseServer(id: string | number, code: number, text: string): void;
  /** The live flight with this upstream id. */
  flight(upstreamId: number): Flight | undefined;
  /** `sink` no longer waits for `flight`. */
  detach(flight: Flight, sink: Sink): void;
  readonly requestTimeoutMs: number;
  /** How long parked work waits for its retry. */
  readonly inputTimeoutMs: number;
}

/**
 * The input rounds of every call in progress: turns server requests into
 * InputRequiredResults, parks the work, and resumes it from a retry's sealed state.
 */
export class InputRoundKeeper {
  /** Server requests waiting for a client's answer, by the server's id. */
  readonly #awaited = new Map<string | number, Flight>();
  readonly #seal = new RequestStateSeal();
  readonly #host: RoundHost;

  constructor(host: RoundHost) {
    this.#host = host;
  }

  /** A server request made while serving a modern client's call: it becomes an input round. */
  serverRequest(flight: Flight, message: JsonRpcMessage): void {
    const id = message.id as string | number;
    const method = message.method as string;
    const rounds = flight.rounds;
    if (rounds === undefined)
      return this.#host.refuseServer(
        id,
        JsonRpcCode.methodNotFound,
        `the client cannot answer ${method} for this request`,
      );
    const needed = capabilityFor(method);
    if (needed === undefined)
      return this.#host.refuseServer(id, JsonRpcCode.methodNotFound, `mcpmgr cannot pass ${method} to the client`);
    if (!flight.session.capabilities[needed]) {
      rounds.missing.add(needed);
      return this.#host.refuseServer(id, JsonRpcCode.methodNotFound, `the client does not support ${method}`);
    }
    const key = nextKey(rounds, method);
    const offered = offeredAnswer(rounds, key);
    if (offered !== undefined) {
      this.#host.send({ jsonrpc: "2.0", id, result: offered });
      return;
    }
    rounds.awaited.set(key, { serverId: id, method, params: message.params });
    this.#awaited.set(id, flight);
    rounds.gather ??= setTimeout(() => this.#askForInput(flight), gatherMs);
  }

  /** Answers the client's current round with an InputRequiredResult and parks the call. */
  #askForInput(flight: Flight): void {
    const rounds = flight.rounds;
    if (rounds === undefined || this.#host.flight(flight.upstreamId) !== flight) return;
    rounds.gather = undefined;
    const sink = flight.sink;
    if (sink === undefined || rounds.awaited.size === 0) return;
    rounds.round++;
    rounds.offered = undefined;
    const timeout = this.#host.inputTimeoutMs;
    const requestState = this.#seal.seal({
      flight: flight.upstreamId,
      round: rounds.round,
      method: flight.method,
      digest: rounds.digest,
      principal: rounds.principal,
      expires: Date.now() + timeout,
    });
    // Parked: no POST waits for it now; the retry re-attaches one.
    flight.sink = undefined;
    flight.clientToken = undefined;
    flight.deadline = performance.now() + timeout;
    this.#host.detach(flight, sink);
    sink.send({
      jsonrpc: "2.0",
      id: flight.clientId,
      result: { resultType: "input_required", inputRequests: inputRequests(rounds.awaited), requestState },
    });
  }

  /** A retry carrying requestState: hands the client's answers to the waiting server requests. */
  resume(session: ClientSession, message: JsonRpcMessage, sink: Sink): void {
    const id = message.id as JsonRpcId;
    const params = message.params ?? {};
    const refuse = (why: string): void => {
      sink.send(errorResponse(id, JsonRpcCode.invalidParams, `Invalid params: ${why}`));
    };
    const state = this.#seal.open(params.requestState);
    if (typeof state === "string") return refuse(state);
    const flight = this.#host.flight(state.flight);
    const rounds = flight?.rounds;
    if (flight === undefined || rounds === undefined)
      return refuse("the call this requestState resumes is over; call again without it");
    if (
      state.method !== message.method ||
      state.digest !== paramsDigest(params) ||
      state.principal !== session.principal ||
      rounds.digest !== state.digest
    )
      return refuse("requestState belongs to another call");
    if (flight.sink !== undefined || state.round !== rounds.round)
      return refuse("requestState was already used; use the one from the latest answer");
    flight.session = session;
    flight.clientId = id;
    flight.sink = sink;
    flight.clientToken = progressTokenOf(message);
    flight.deadline = performance.now() + this.#host.requestTimeoutMs;
    session.openSinks.add(sink);
    const answers = params.inputResponses as Record<string, unknown> | undefined;
    rounds.offered = answers;
    for (const [key, input] of rounds.awaited) {
      const answer = offeredAnswer(rounds, key);
      if (answer === undefined) continue;
      rounds.awaited.delete(key);
      this.#awaited.delete(input.serverId);
      this.#host.send({ jsonrpc: "2.0", id: input.serverId, result: answer });
    }
    // What is still unanswered is asked again, in a new round.
    if (rounds.awaited.size > 0) this.#askForInput(flight);
  }

  /** The call is over: server requests still waiting for it are answered with an error. */
  release(flight: Flight): void {
    if (flight.rounds?.gather !== undefined) clearTimeout(flight.rounds.gather);
    for (const [serverId, owner] of this.#awaited) {
      if (owner !== flight) continue;
      this.#awaited.delete(serverId);
      this.#host.send(errorResponse(serverId, JsonRpcCode.internalError, "the request it belongs to is over"));
    }
  }
}

/** The client capability each server→client request needs, and its key stem. */
const needs: Readonly<Record<string, { capability: keyof ClientCapabilities; stem: string }>> = {
  "sampling/createMessage": { capability: "sampling", stem: "sampling" },
  "elicitation/create": { capability: "elicitation", stem: "elicitation" },
  "roots/list": { capability: "roots", stem: "roots" },
};

export function capabilityFor(method: string): keyof ClientCapabilities | undefined {
  return needs[method]?.capability;
}

export function newRounds(
  digest: string,
  principal: string,
  offered: Record<string, unknown> | undefined,
): InputRounds {
  return {
    digest,
    principal,
    round: 0,
    keyCounts: new Map(),
    awaited: new Map(),
    offered,
    missing: new Set(),
    gather: undefined,
  };
}

/** The next key for a server request of `method` in this call. */
function nextKey(rounds: InputRounds, method: string): string {
  const stem = needs[method]?.stem ?? "input";
  const count = (rounds.keyCounts.get(stem) ?? 0) + 1;
  rounds.keyCounts.set(stem, count);
  return count === 1 ? stem : `${stem}-${count}`;
}

/** An answer the client offered for `key`, if it has the shape of a result (an object). */
function offeredAnswer(rounds: InputRounds, key: string): Record<string, unknown> | undefined {
  const answer = rounds.offered?.[key];
  return isObject(answer) ? answer : undefined;
}

/** `inputResponses` must be an object of objects when present; a reason when it is not. */
export function invalidInputResponses(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return "inputResponses must be an object mapping input request keys to results";
  return undefined;
}

function inputRequests(awaited: ReadonlyMap<string, AwaitedInput>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, input] of awaited)
    out[key] = { method: input.method, ...(input.params !== undefined ? { params: input.params } : {}) };
  return out;
}

/** Client-only fields of a modern request that an older server must not see. */
export function withoutRoundFields(params: Record<string, unknown>): Record<string, unknown> {
  if (!("inputResponses" in params) && !("requestState" in params)) return params;
  const { inputResponses: _answers, requestState: _state, ...rest } = params;
  return rest;
}
