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
import type { AwaitedInput, InputRounds } from "./flight.ts";
import type { ClientCapabilities } from "./session.ts";

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
export function nextKey(rounds: InputRounds, method: string): string {
  const stem = needs[method]?.stem ?? "input";
  const count = (rounds.keyCounts.get(stem) ?? 0) + 1;
  rounds.keyCounts.set(stem, count);
  return count === 1 ? stem : `${stem}-${count}`;
}

/** An answer the client offered for `key`, if it has the shape of a result (an object). */
export function offeredAnswer(rounds: InputRounds, key: string): Record<string, unknown> | undefined {
  const answer = rounds.offered?.[key];
  return typeof answer === "object" && answer !== null && !Array.isArray(answer)
    ? (answer as Record<string, unknown>)
    : undefined;
}

/** `inputResponses` must be an object of objects when present; a reason when it is not. */
export function invalidInputResponses(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return "inputResponses must be an object mapping input request keys to results";
  return undefined;
}

export function inputRequests(awaited: ReadonlyMap<string, AwaitedInput>): Record<string, unknown> {
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
