/**
 * Validating the bearer tokens clients present to the proxy (ARCHITECTURE.md §3.3: verify → Principal
 * or a typed rejection). JWTs are checked with jose against the issuer's JWKS (fetched
 * through the guarded fetch, cached, refetched when an unknown key id appears: rotation):
 * signature with an allowed asymmetric algorithm, `iss`, `aud`, `exp`/`nbf` with a small
 * clock tolerance. Opaque tokens go to the RFC 7662 introspection endpoint when configured
 * (introspection.ts).
 */
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
import { introspector } from "./introspection.ts";
import { issuerForms, type Principal, principalFromClaims } from "./principal.ts";
import {
  assertBearer,
  describeFetchFailure,
  describeJoseError,
  isFetchFailure,
  TokenRejected,
  VerificationUnavailable,
} from "./verifier-errors.ts";

export { TokenRejected, VerificationUnavailable };
export type { Principal };

/** Asymmetric only: a shared-secret algorithm would let anyone holding the JWKS forge tokens. */
const ALLOWED_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];
const CLOCK_TOLERANCE_S = 30;
/** JWT `typ` values accepted for access tokens (compared lower-cased). */
const accessTokenTypes: ReadonlySet<string> = new Set(["at+jwt", "application/at+jwt", "jwt"]);
/** How long one fetch of keys may take before the request is refused. */
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
      return principalFromClaims(payload as JWTPayload & Record<string, unknown>);
    } catch (err) {
      if (err instanceof TokenRejected || err instanceof VerificationUnavailable) throw err;
      throw new TokenRejected("invalid_token", describeJoseError(err));
    }
  }

  const introspect =
    spec.introspection === undefined
      ? async () => {
          throw new TokenRejected(
            "invalid_token",
            "the token is not a JWT, and no introspection endpoint is configured",
          );
        }
      : introspector({ spec: { ...spec, introspection: spec.introspection }, fetch: fetcher, now, clock, warn });

  return {
    verify(token) {
      // A JWS compact serialization has three base64url parts; anything else is opaque.
      return /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token) ? verifyJwt(token) : introspect(token);
    },
  };
}
