/**
 * The `requestState` the bridge hands a 2026-07-28 client with an InputRequiredResult.
 * It names the server work the retry resumes, so it is attacker-controlled input when it
 * comes back: sealed with HMAC-SHA256 under a key that lives only in this process, bound
 * to the principal who started the call, to the method and a digest of its parameters
 * (a retry of another call cannot resume this one), short-lived, and small. A state that
 * fails any check is refused, never half-trusted.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export interface StatePayload {
  /** The bridge's id for the parked server work. */
  readonly flight: number;
  /** Which round of input this state answers (a replayed older round is refused). */
  readonly round: number;
  readonly method: string;
  /** Digest of the call's parameters (input responses and state excluded). */
  readonly digest: string;
  /** The authenticated subject, "" when the endpoint has no authentication. */
  readonly principal: string;
  /** Expiry, milliseconds since the epoch. */
  readonly expires: number;
}

/** Longer than any state the bridge issues: anything bigger is refused unread. */
const maxStateLength = 1024;

export class RequestStateSeal {
  readonly #key = randomBytes(32);

  seal(payload: StatePayload): string {
    const body = Buffer.from(JSON.stringify(payload)).toString("base64url");
    return `${body}.${this.#mac(body)}`;
  }

  /** The payload of a genuine, unexpired state; a reason otherwise. */
  open(state: unknown, now = Date.now()): StatePayload | string {
    if (typeof state !== "string" || state.length > maxStateLength) return "requestState is not one mcpmgr issued";
    const dot = state.indexOf(".");
    if (dot <= 0) return "requestState is not one mcpmgr issued";
    const body = state.slice(0, dot);
    const mac = Buffer.from(state.slice(dot + 1), "base64url");
    const expected = Buffer.from(this.#mac(body), "base64url");
    if (mac.byteLength !== expected.byteLength || !timingSafeEqual(mac, expected))
      return "requestState failed its integrity check";
    let payload: StatePayload;
    try {
      payload = JSON.parse(Buffer.from(body, "base64url").toString()) as StatePayload;
    } catch {
      return "requestState failed its integrity check";
    }
    if (payload.expires <= now) return "requestState has expired: call again without it";
    return payload;
  }

  #mac(body: string): string {
    return createHmac("sha256", this.#key).update(body).digest("base64url");
  }
}

/** A digest of a call's parameters, leaving out what changes between its rounds. */
export function paramsDigest(params: Record<string, unknown> | undefined): string {
  const { _meta, inputResponses, requestState, ...rest } = params ?? {};
  return createHash("sha256").update(JSON.stringify(rest)).digest("base64url").slice(0, 22);
}
