/**
 * Validating the bearer tokens clients present to the proxy (ARCHITECTURE.md §3.3: verify → Principal
 * or a typed rejection). JWTs are checked with jose against the issuer's JWKS (fetched
 * through the guarded fetch, cached, refetched when an unknown key id appears: rotation):
 * signature with an allowed asymmetric algorithm, `iss`, `aud`, `exp`/`nbf` with a small
 * clock tolerance. Opaque tokens go to the RFC 7662 introspection endpoint when configured.
 */
import { createHash } from "node:crypto";
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  errors as joseErrors,
  type JSONWebKeySet,
  type JWSHeaderParameters,
  jwtVerify,
  type JWTPayload,
  type FlattenedJWSInput,
} from "jose";
import type { IncomingAuthSpec } from "../../config/incoming-auth-spec.ts";
import { McpmgrError, errorMessage } from "../../errors.ts";
import { guardedFetch, type Fetch } from "./guarded-fetch.ts";
import {
  assertBearer,
  describeFetchFailure,
  describeJoseError,
  IntrospectionRefused,
  isFetchFailure,
  TokenRejected,
  VerificationUnavailable,
} from "./verifier-errors.ts";

export { TokenRejected, VerificationUnavailable };

/** Asymmetric only: a shared-secret algorithm would let anyone holding the JWKS forge tokens. */
export const ALLOWED_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
];
const CLOCK_TOLERANCE_S = 30;
/** JWT `typ` values accepted for access tokens (compared lower-cased). */
const accessTokenTypes: ReadonlySet<string> = new Set(["at+jwt", "application/at+jwt", "jwt"]);
const INTROSPECTION_CACHE_MS = 30_000;
/** How long one fetch of keys or one introspection may take before the request is refused. */
const AUTHORIZATION_SERVER_TIMEOUT_MS = 5_000;
/**
 * After the authorization server failed to answer, requests that need it are refused at once
 * for this long (then it is asked again): while it is down, each request must not wait out a
 * timeout of its own.
 */
const OUTAGE_BACKOFF_MS = 5_000;
/**
 * A JWT checked once is accepted again without a signature check until it expires, for at
 * most this long: clients send the same token on every request, and RS256 verification is
 * most of the cost of an authenticated request. (A key removed from the JWKS stops being
 * trusted for cached tokens after this at the latest.)
 */
const JWT_CACHE_MS = 60_000;
const CACHE_LIMIT = 10_000;

export interface Principal {
  /** `sub`, else `client_id` (client-credentials tokens). */
  readonly subject: string;
  readonly scopes: readonly string[];
  /** Every claim of the token (JWT payload or introspection answer). */
  readonly claims: Readonly<Record<string, unknown>>;
}

export interface TokenVerifier {
  verify(token: string): Promise<Principal>;
}

export interface VerifierOptions {
  readonly fetch?: Fetch;
  /** Seconds; jose's default is 30: how soon an unknown `kid` may trigger another JWKS fetch. */
  readonly jwksCooldownMs?: number;
  readonly now?: () => number;
  /**
   * Where a failure to ask the authorization server is reported (the workload's or proxy's log):
   * clients get only a 503, so without this an operator cannot tell an outage from a
   * misconfiguration. Called once per failure, so at most once per back-off period.
   */
  readonly warn?: (text: string) => void;
}

function issuerForms(issuer: URL): string[] {
  const text = issuer.href;
  return [...new Set([text, text.replace(/\/$/, "")])];
}

function scopesOf(claims: Record<string, unknown>): string[] {
  if (typeof claims.scope === "string") return claims.scope.split(" ").filter(Boolean);
  if (Array.isArray(claims.scp)) return claims.scp.filter((s): s is string => typeof s === "string");
  return [];
}

function principalOf(claims: Record<string, unknown>): Principal {
  const subject =
    typeof claims.sub === "string" ? claims.sub : typeof claims.client_id === "string" ? claims.client_id : "";
  if (subject === "") throw new TokenRejected("invalid_token", "the token names no subject");
  return Object.freeze({ subject, scopes: Object.freeze(scopesOf(claims)), claims: Object.freeze({ ...claims }) });
}

/** OIDC discovery, then RFC 8414 (with path insertion for issuers that have a path). */
async function discover(
  issuer: URL,
  fetcher: Fetch,
): Promise<{ jwks_uri?: string; introspection_endpoint?: string; issuer?: string }> {
  const base = issuer.href.replace(/\/$/, "");
  const path = issuer.pathname.replace(/\/$/, "");
  const candidates = [
    `${base}/.well-known/openid-configuration`,
    `${issuer.origin}/.well-known/oauth-authorization-server${path}`,
  ];
  const failures: string[] = [];
  for (const url of candidates) {
    try {
      const response = await fetcher(url, {
        headers: { accept: "application/json" },
        signal: AbortSignal.timeout(10_000),
      });
      if (response.ok) return (await response.json()) as { jwks_uri?: string };
      failures.push(`${url}: HTTP ${response.status}`);
    } catch (err) {
      if (err instanceof McpmgrError) throw err;
      failures.push(`${url}: ${errorMessage(err)}`);
    }
  }
  throw new McpmgrError("AUTH_SETUP_FAILED", `OIDC discovery for ${issuer.href} failed (${failures.join("; ")})`, {
    hint: "check --oidc-issuer, or give --oidc-jwks-url",
  });
}

export async function createTokenVerifier(
  spec: IncomingAuthSpec,
  options: VerifierOptions = {},
): Promise<TokenVerifier> {
  const fetcher = options.fetch ?? guardedFetch(spec);
  const now = options.now ?? Date.now;
  const warn = options.warn ?? (() => {});
  let jwksUrl = spec.jwksUrl;
  if (jwksUrl === undefined) {
    const document = await discover(spec.issuer, fetcher);
    if (document.issuer !== undefined && !issuerForms(spec.issuer).includes(document.issuer)) {
      throw new McpmgrError(
        "AUTH_SETUP_FAILED",
        `the discovery document of ${spec.issuer.href} names another issuer (${document.issuer})`,
        { hint: "give --oidc-issuer exactly as the authorization server names itself" },
      );
    }
    if (!document.jwks_uri)
      throw new McpmgrError("AUTH_SETUP_FAILED", `the discovery document of ${spec.issuer.href} has no jwks_uri`, {
        hint: "give --oidc-jwks-url",
      });
    jwksUrl = new URL(document.jwks_uri);
  }
  // Fail at start-up, not on the first request: the keys must be reachable (and allowed).
  const probe = await fetcher(jwksUrl, { signal: AbortSignal.timeout(10_000) }).catch((err: unknown) => {
    if (err instanceof McpmgrError) throw err;
    throw new McpmgrError("AUTH_SETUP_FAILED", `cannot fetch the JWKS at ${jwksUrl?.href}: ${errorMessage(err)}`, {
      hint: "check --oidc-jwks-url / --oidc-issuer",
    });
  });
  if (!probe.ok)
    throw new McpmgrError("AUTH_SETUP_FAILED", `the JWKS at ${jwksUrl.href} answered HTTP ${probe.status}`, {
      hint: "check --oidc-jwks-url / --oidc-issuer and --jwks-auth-token-file",
    });
  const remoteKeys = createRemoteJWKSet(jwksUrl, {
    cooldownDuration: options.jwksCooldownMs ?? 30_000,
    cacheMaxAge: 10 * 60_000,
    timeoutDuration: AUTHORIZATION_SERVER_TIMEOUT_MS,
    [customFetch]: (url: string, init: RequestInit) => fetcher(url, init),
  });
  const clock = () => performance.now();
  let keysDownUntil = 0;
  let cachedKeys: { jwks: JSONWebKeySet; local: ReturnType<typeof createLocalJWKSet> } | undefined;
  const unavailable = (what: string, until: number, detail?: string) =>
    new VerificationUnavailable(
      `the authorization server cannot be reached to check the token (${what})`,
      until - clock(),
      detail,
    );

  /**
   * The issuer's keys, as jose fetches and caches them (rotation: an unknown key id fetches them
   * again). While fetching them fails, tokens whose key is in the (still fresh) cache are checked
   * with it, and the others are refused at once instead of each waiting out a fetch.
   */
  async function keys(header: JWSHeaderParameters, token: FlattenedJWSInput) {
    if (clock() < keysDownUntil) {
      const jwks = remoteKeys.fresh ? remoteKeys.jwks() : undefined;
      if (jwks === undefined) throw unavailable("its keys", keysDownUntil);
      if (cachedKeys?.jwks !== jwks) cachedKeys = { jwks, local: createLocalJWKSet(jwks) };
      try {
        return await cachedKeys.local(header, token);
      } catch (err) {
        if (err instanceof joseErrors.JWKSNoMatchingKey) throw unavailable("its keys", keysDownUntil);
        throw err;
      }
    }
    try {
      return await remoteKeys(header, token);
    } catch (err) {
      if (!isFetchFailure(err)) throw err;
      keysDownUntil = clock() + OUTAGE_BACKOFF_MS;
      const detail = describeFetchFailure(err);
      warn(
        `cannot fetch the keys of ${spec.issuer.href} to check a token (${detail}); requests that need them are refused with 503 for ${OUTAGE_BACKOFF_MS / 1000} s`,
      );
      throw unavailable("its keys", keysDownUntil, detail);
    }
  }

  const introspected = new Map<string, { principal: Principal | TokenRejected; until: number }>();
  /** One introspection per token at a time: concurrent requests with the same token share it. */
  const introspecting = new Map<string, Promise<Principal>>();
  let introspectionDownUntil = 0;

  const verifiedJwts = new Map<string, { principal: Principal; until: number }>();

  async function verifyJwt(token: string): Promise<Principal> {
    const hit = verifiedJwts.get(token);
    if (hit && hit.until > now()) return hit.principal;
    if (hit) verifiedJwts.delete(token);
    const principal = await verifyJwtSignature(token);
    const exp = typeof principal.claims.exp === "number" ? principal.claims.exp * 1000 : now();
    verifiedJwts.set(token, { principal, until: Math.min(now() + JWT_CACHE_MS, exp) });
    if (verifiedJwts.size > CACHE_LIMIT) verifiedJwts.delete(verifiedJwts.keys().next().value as string);
    return principal;
  }

  async function verifyJwtSignature(token: string): Promise<Principal> {
    try {
      const { payload, protectedHeader } = await jwtVerify(token, keys, {
        issuer: issuerForms(spec.issuer),
        ...(spec.audience !== undefined ? { audience: spec.audience } : {}),
        algorithms: ALLOWED_ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ["exp"],
        currentDate: new Date(now()),
      });
      // RFC 9068 §4: an access token says so (at+jwt); plain JWT and no typ are what many issuers
      // send. Anything else signed by the issuer (a logout token, an ID token typed as such, a
      // security event) is not a credential for this resource.
      const typ = protectedHeader.typ?.toLowerCase();
      if (typ !== undefined && !accessTokenTypes.has(typ))
        throw new TokenRejected("invalid_token", `the token is not an access token (typ ${protectedHeader.typ})`);
      assertBearer(payload.cnf, undefined);
      return principalOf(payload as JWTPayload & Record<string, unknown>);
    } catch (err) {
      if (err instanceof TokenRejected || err instanceof VerificationUnavailable) throw err;
      throw new TokenRejected("invalid_token", describeJoseError(err));
    }
  }

  async function introspect(token: string): Promise<Principal> {
    if (spec.introspection === undefined)
      throw new TokenRejected("invalid_token", "the token is not a JWT, and no introspection endpoint is configured");
    const key = createHash("sha256").update(token).digest("base64url");
    const cached = introspected.get(key);
    if (cached && cached.until > now()) {
      if (cached.principal instanceof TokenRejected) throw cached.principal;
      return cached.principal;
    }
    if (clock() < introspectionDownUntil) throw unavailable("introspection", introspectionDownUntil);
    const pending = introspecting.get(key);
    if (pending !== undefined) return pending;
    const asking = askIntrospection(token, key).finally(() => introspecting.delete(key));
    introspecting.set(key, asking);
    return asking;
  }

  /** Remembers an answer (a refusal too, so one token sent again and again is asked about once). */
  function remember(key: string, principal: Principal | TokenRejected, until: number): void {
    introspected.set(key, { principal, until });
    if (introspected.size > CACHE_LIMIT) introspected.delete(introspected.keys().next().value as string);
  }

  async function askIntrospection(token: string, key: string): Promise<Principal> {
    const introspection = spec.introspection as NonNullable<IncomingAuthSpec["introspection"]>;
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
    let answer: Record<string, unknown>;
    try {
      const response = await fetcher(introspection.url, {
        method: "POST",
        headers,
        body,
        signal: AbortSignal.timeout(AUTHORIZATION_SERVER_TIMEOUT_MS),
      });
      if (response.status === 401 || response.status === 403) {
        // RFC 7662 §2.1: the endpoint authenticates its caller; this refuses mcpmgr, not the token.
        throw new IntrospectionRefused(response.status);
      }
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      answer = (await response.json()) as Record<string, unknown>;
      if (answer === null || typeof answer !== "object") throw new Error("the answer is not a JSON object");
    } catch (err) {
      // The token may be fine; we could not ask. Still a refusal: never let a request through unverified.
      introspectionDownUntil = clock() + OUTAGE_BACKOFF_MS;
      if (err instanceof IntrospectionRefused) {
        warn(
          `the introspection endpoint ${introspection.url} refused mcpmgr's client credentials (HTTP ${err.status}); every request with an opaque token is refused with 503 until they are right (hint: check --oidc-client-id and --oidc-client-secret / --oidc-client-secret-file)`,
        );
        throw new VerificationUnavailable(
          "the authorization server refused the proxy's own credentials for introspection",
          introspectionDownUntil - clock(),
          `HTTP ${err.status}`,
        );
      }
      const detail = describeFetchFailure(err);
      warn(
        `cannot ask the introspection endpoint ${introspection.url} about a token (${detail}); requests with opaque tokens are refused with 503 for ${OUTAGE_BACKOFF_MS / 1000} s`,
      );
      throw unavailable("introspection", introspectionDownUntil, detail);
    }
    const exp = typeof answer.exp === "number" ? answer.exp * 1000 : undefined;
    let principal: Principal;
    try {
      principal = principalOfIntrospection(answer, exp);
    } catch (err) {
      // Remembered like "not active": a token refused for its issuer, audience, binding or age is
      // refused again without asking, or each request with it would be one more introspection.
      if (err instanceof TokenRejected) remember(key, err, now() + INTROSPECTION_CACHE_MS);
      throw err;
    }
    remember(key, principal, Math.min(now() + INTROSPECTION_CACHE_MS, exp ?? Number.POSITIVE_INFINITY));
    return principal;
  }

  /** What an introspection answer says about the token: a Principal, or why it is refused. */
  function principalOfIntrospection(answer: Record<string, unknown>, exp: number | undefined): Principal {
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
    return principalOf(answer);
  }

  return {
    verify(token) {
      // A JWS compact serialization has three base64url parts; anything else is opaque.
      return /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token) ? verifyJwt(token) : introspect(token);
    },
  };
}
