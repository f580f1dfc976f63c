/**
 * Opaque tokens checked at the RFC 7662 introspection endpoint (`--oidc-introspection-url`), with
 * the rules that keep a flood of made-up tokens from turning into a flood of introspections or an
 * outage for everyone (review 12, F10):
 *
 * - Answers are remembered: accepted tokens for 30 s (and never past their `exp`), refusals for
 *   30 s, in two separate caches, so made-up tokens (each one a refusal) cannot push the tokens of
 *   real clients out.
 * - At most MAX_INTROSPECTIONS_IN_FLIGHT introspections run at once, shared by all clients. A token
 *   the endpoint has not answered for yet, arriving while they are all busy, is refused with `503`
 *   and `Retry-After: 1` without asking; a known token is served from its last answer instead.
 * - Only answers that blame the server stop introspection for everyone for a while: no answer, a
 *   `5xx`, an answer that is not JSON (5 s), a `429` (its `Retry-After`, 1 to 60 s, else 5 s), and
 *   a `401`/`403` refusing mcpmgr's own credentials. Any other answer (a `400` some servers give for
 *   a token they cannot parse, a `404`, a `413`) says nothing about the server's health nor about
 *   the token: that one request is refused with `503`, nobody else's.
 * - While the server cannot be asked, a token it said was active keeps being accepted for up to
 *   OUTAGE_GRACE_MS after that answer (never past its `exp`): an outage does not log out the
 *   clients that were working. A revocation during the outage is seen when it ends.
 */
import { createHash } from "node:crypto";
import type { IncomingAuthSpec } from "../../config/incoming-auth-spec.ts";
import type { Fetch } from "./guarded-fetch.ts";
import { issuerForms, type Principal, principalFromClaims } from "./principal.ts";
import { assertBearer, describeFetchFailure, TokenRejected, VerificationUnavailable } from "./verifier-errors.ts";

const ANSWER_CACHE_MS = 30_000;
/** How long one introspection may take before the request is refused. */
const INTROSPECTION_TIMEOUT_MS = 5_000;
/** After the server failed, it is not asked again for this long (requests are refused at once). */
const OUTAGE_BACKOFF_MS = 5_000;
/** A `429`'s Retry-After is honoured within these bounds. */
const MIN_RETRY_AFTER_MS = 1_000;
const MAX_RETRY_AFTER_MS = 60_000;
/** How long after its last answer an active token is still accepted while the server cannot be asked. */
const OUTAGE_GRACE_MS = 5 * 60_000;
/** Introspections running at once, for all clients together. */
export const MAX_INTROSPECTIONS_IN_FLIGHT = 8;
/**
 * Tokens waiting for one of those slots (each at most INTROSPECTION_TIMEOUT_MS): a burst of real
 * clients starting at once waits its turn; past this many, a new token is refused at once.
 */
export const MAX_INTROSPECTIONS_WAITING = 64;
/** Warnings about single requests (throttled, odd answers) at most this often. */
const NOTICE_INTERVAL_MS = 5_000;
const CACHE_LIMIT = 10_000;
const CLOCK_TOLERANCE_S = 30;

type Introspection = NonNullable<IncomingAuthSpec["introspection"]>;

export interface IntrospectorOptions {
  readonly spec: IncomingAuthSpec & { readonly introspection: Introspection };
  readonly fetch: Fetch;
  /** Wall clock (for `exp`). */
  readonly now: () => number;
  /** Monotonic clock (for back-offs). */
  readonly clock: () => number;
  readonly warn: (text: string) => void;
}

interface Accepted {
  readonly principal: Principal;
  /** Used without asking until then. */
  readonly freshUntil: number;
  /** Used while the server cannot be asked until then. */
  readonly usableUntil: number;
}

/** Why asking failed: `backoffMs` when the server is to blame (nobody asks it for that long). */
class AskFailed extends Error {
  readonly clientMessage: string;
  readonly detail: string;
  readonly backoffMs: number | undefined;
  readonly warning: string;
  constructor(clientMessage: string, detail: string, backoffMs: number | undefined, warning: string) {
    super(detail);
    this.clientMessage = clientMessage;
    this.detail = detail;
    this.backoffMs = backoffMs;
    this.warning = warning;
  }
}

/** Retry-After in seconds or as an HTTP date; clamped, and 5 s when absent or unreadable. */
function retryAfterMs(header: string | null, now: number): number {
  let ms = Number.NaN;
  if (header !== null && /^\s*\d+\s*$/.test(header)) ms = Number(header) * 1000;
  else if (header !== null) ms = Date.parse(header) - now;
  if (!Number.isFinite(ms)) return OUTAGE_BACKOFF_MS;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(MIN_RETRY_AFTER_MS, ms));
}

export function introspector(options: IntrospectorOptions): (token: string) => Promise<Principal> {
  const { spec, now, clock, warn } = options;
  const introspection = spec.introspection;
  const accepted = new Map<string, Accepted>();
  const refused = new Map<string, { rejection: TokenRejected; until: number }>();
  /** One introspection per token at a time: concurrent requests with the same token share it. */
  const inFlight = new Map<string, Promise<Principal>>();
  /** Introspections sent and not answered yet (at most MAX_INTROSPECTIONS_IN_FLIGHT). */
  let running = 0;
  /** Tokens waiting for a slot, oldest first: a finished introspection hands its slot to the first. */
  const waiting: (() => void)[] = [];
  let downUntil = 0;
  let downBecause = "";
  let noticedAt = Number.NEGATIVE_INFINITY;

  const notice = (text: string) => {
    if (clock() - noticedAt < NOTICE_INTERVAL_MS) return;
    noticedAt = clock();
    warn(text);
  };
  const bounded = <V>(map: Map<string, V>, key: string, value: V) => {
    map.delete(key);
    map.set(key, value);
    if (map.size > CACHE_LIMIT) map.delete(map.keys().next().value as string);
  };

  async function ask(token: string): Promise<Record<string, unknown>> {
    const body = new URLSearchParams({ token, token_type_hint: "access_token" });
    const headers: Record<string, string> = {
      "content-type": "application/x-www-form-urlencoded",
      accept: "application/json",
    };
    if (introspection.clientSecret !== undefined) {
      headers.authorization = `Basic ${btoa(`${encodeURIComponent(introspection.clientId)}:${encodeURIComponent(introspection.clientSecret)}`)}`;
    } else {
      body.set("client_id", introspection.clientId);
    }
    const endpoint = introspection.url.href;
    const serverFault = (detail: string, backoffMs = OUTAGE_BACKOFF_MS) =>
      new AskFailed(
        "the authorization server cannot be reached to check the token (introspection)",
        detail,
        backoffMs,
        `cannot ask the introspection endpoint ${endpoint} about a token (${detail}); requests with opaque tokens it has not answered for are refused with 503 for ${Math.ceil(backoffMs / 1000)} s`,
      );
    let response: Response;
    try {
      response = await options.fetch(introspection.url, {
        method: "POST",
        headers,
        body,
        signal: AbortSignal.timeout(INTROSPECTION_TIMEOUT_MS),
      });
    } catch (err) {
      throw serverFault(describeFetchFailure(err));
    }
    if (response.ok) {
      const answer = (await response.json().catch(() => undefined)) as unknown;
      if (answer === null || typeof answer !== "object" || Array.isArray(answer))
        throw serverFault("the answer is not a JSON object");
      return answer as Record<string, unknown>;
    }
    await response.body?.cancel().catch(() => {});
    const status = response.status;
    if (status === 401 || status === 403) {
      // RFC 7662 §2.1: the endpoint authenticates its caller; this refuses mcpmgr, not the token.
      throw new AskFailed(
        "the authorization server refused the proxy's own credentials for introspection",
        `HTTP ${status}`,
        OUTAGE_BACKOFF_MS,
        `the introspection endpoint ${endpoint} refused mcpmgr's client credentials (HTTP ${status}); every request with an opaque token is refused with 503 until they are right (hint: check --oidc-client-id and --oidc-client-secret / --oidc-client-secret-file)`,
      );
    }
    if (status === 429)
      throw serverFault("HTTP 429, rate limited", retryAfterMs(response.headers.get("retry-after"), now()));
    if (status >= 500) throw serverFault(`HTTP ${status}`);
    // Neither the server's health nor the token's validity: this request alone is refused.
    throw new AskFailed(
      "the authorization server could not check the token (introspection)",
      `HTTP ${status}`,
      undefined,
      `the introspection endpoint ${endpoint} answered HTTP ${status} about a token; that request was refused with 503 (other requests are not affected; check --oidc-introspection-url if every one gets this)`,
    );
  }

  /** What an introspection answer says about the token: a Principal, or why it is refused. */
  function verdict(answer: Record<string, unknown>, exp: number | undefined): Principal {
    if (answer.active !== true) throw new TokenRejected("invalid_token", "the token is not active");
    assertBearer(answer.cnf, answer.token_type);
    if (typeof answer.iss === "string" && !issuerForms(spec.issuer).includes(answer.iss))
      throw new TokenRejected("invalid_token", "the token was issued by another issuer");
    if (spec.audience !== undefined) {
      const audiences = Array.isArray(answer.aud) ? answer.aud : typeof answer.aud === "string" ? [answer.aud] : [];
      if (!audiences.includes(spec.audience))
        throw new TokenRejected("invalid_token", "the token is not meant for this resource (aud)");
    }
    if (exp !== undefined && exp + CLOCK_TOLERANCE_S * 1000 < now())
      throw new TokenRejected("invalid_token", "the token has expired");
    return principalFromClaims(answer);
  }

  async function check(token: string, key: string, known: Principal | undefined): Promise<Principal> {
    let answer: Record<string, unknown>;
    try {
      answer = await ask(token);
    } catch (err) {
      if (!(err instanceof AskFailed)) throw err;
      if (err.backoffMs !== undefined) {
        downUntil = clock() + err.backoffMs;
        downBecause = err.clientMessage;
        warn(err.warning);
      } else notice(err.warning);
      // The token may be fine; we could not ask. Still a refusal unless the server vouched for it
      // recently: never let a request through unverified.
      if (known !== undefined) return known;
      throw new VerificationUnavailable(err.clientMessage, err.backoffMs ?? MIN_RETRY_AFTER_MS, err.detail);
    }
    const exp = typeof answer.exp === "number" ? answer.exp * 1000 : undefined;
    let principal: Principal;
    try {
      // RFC 7662 §2.2: `exp` is a NumericDate. Another type (a string, null, an object) is a broken
      // answer, not "no expiry": read as none, it would make the token good for as long as it is cached
      // and, through an outage, past the end the server meant. Refused, and the log says why (never the token).
      if (answer.active === true && answer.exp !== undefined && exp === undefined) {
        notice(
          `the introspection endpoint ${introspection.url.href} answered with an exp that is not a number (${answer.exp === null ? "null" : typeof answer.exp}); that token was refused (RFC 7662 asks for a NumericDate)`,
        );
        throw new TokenRejected(
          "invalid_token",
          "the authorization server's answer about the token is malformed (exp)",
        );
      }
      principal = verdict(answer, exp);
    } catch (err) {
      // Remembered like "not active": a token refused for its issuer, audience, binding or age is
      // refused again without asking, or each request with it would be one more introspection.
      if (err instanceof TokenRejected) {
        accepted.delete(key);
        bounded(refused, key, { rejection: err, until: now() + ANSWER_CACHE_MS });
      }
      throw err;
    }
    const at = now();
    bounded(accepted, key, {
      principal,
      freshUntil: Math.min(at + ANSWER_CACHE_MS, exp ?? Number.POSITIVE_INFINITY),
      usableUntil: Math.min(at + OUTAGE_GRACE_MS, exp ?? Number.POSITIVE_INFINITY),
    });
    return principal;
  }

  return async (token) => {
    const key = createHash("sha256").update(token).digest("base64url");
    const at = now();
    const hit = accepted.get(key);
    if (hit && hit.freshUntil > at) return hit.principal;
    const no = refused.get(key);
    if (no && no.until > at) throw no.rejection;
    if (no) refused.delete(key);
    // What the server said last about this token, while it may still stand in for a new answer.
    const known = hit && hit.usableUntil > at ? hit.principal : undefined;
    if (hit && known === undefined) accepted.delete(key);
    if (clock() < downUntil) {
      if (known !== undefined) return known;
      throw new VerificationUnavailable(downBecause, downUntil - clock());
    }
    const pending = inFlight.get(key);
    if (pending !== undefined) return pending;
    if (running >= MAX_INTROSPECTIONS_IN_FLIGHT) {
      if (known !== undefined) return known;
      if (waiting.length >= MAX_INTROSPECTIONS_WAITING) {
        notice(
          `${MAX_INTROSPECTIONS_IN_FLIGHT} introspections are running at once and ${MAX_INTROSPECTIONS_WAITING} tokens wait for their turn; requests with other opaque tokens the endpoint has not answered for are refused with 503 meanwhile (someone sending made-up tokens, or a slow endpoint)`,
        );
        throw tooManyAtOnce();
      }
    }
    const asking = inTurn(() => check(token, key, known)).finally(() => inFlight.delete(key));
    inFlight.set(key, asking);
    return asking;
  };

  /** Runs `introspect` in one of the slots: at once when one is free, else after waiting for one (bounded in time). */
  async function inTurn(introspect: () => Promise<Principal>): Promise<Principal> {
    // A slot handed over by a finished introspection keeps `running` as it is, so none is taken twice.
    if (running < MAX_INTROSPECTIONS_IN_FLIGHT) running++;
    else await slotHandedOver();
    try {
      return await introspect();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  }

  function slotHandedOver(): Promise<void> {
    return new Promise((resolve, reject) => {
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const at = waiting.indexOf(wake);
        if (at !== -1) waiting.splice(at, 1);
        reject(tooManyAtOnce());
      }, INTROSPECTION_TIMEOUT_MS);
      waiting.push(wake);
    });
  }
}

function tooManyAtOnce(): VerificationUnavailable {
  return new VerificationUnavailable(
    "too many tokens are being checked at once; try again",
    MIN_RETRY_AFTER_MS,
    "introspections in flight at their limit",
  );
}
