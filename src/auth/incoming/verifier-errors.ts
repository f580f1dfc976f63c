/**
 * The ways a token check ends other than a Principal (verifier.ts): a rejected token, an
 * authorization server that could not be asked (or refused mcpmgr's own credentials), and the short
 * descriptions of jose's and fetch's failures that go into error_description and the log.
 */
import { errors as joseErrors } from "jose";
import { errorMessage } from "../../errors.ts";

/**
 * Why a token was refused, in RFC 6750 terms (the middleware turns it into a challenge):
 * `invalid_request` is the request's fault (the token sent another way than the header), not the token's.
 */
export class TokenRejected extends Error {
  readonly error: "invalid_token" | "insufficient_scope" | "invalid_request";
  constructor(error: "invalid_token" | "insufficient_scope" | "invalid_request", description: string) {
    super(description);
    this.name = "TokenRejected";
    this.error = error;
  }
}

/**
 * The token could not be checked because the authorization server could not be asked (down,
 * too slow, answering errors): it may be fine, so this is no reason for the client to drop it
 * (no 401); the request is still refused (503, fail closed), and `retryAfterMs` says when the
 * server will be asked again.
 */
export class VerificationUnavailable extends Error {
  readonly retryAfterMs: number;
  /** What went wrong asking the server (for logs; clients get the message only). */
  readonly detail: string | undefined;
  constructor(description: string, retryAfterMs: number, detail?: string) {
    super(description);
    this.name = "VerificationUnavailable";
    this.retryAfterMs = retryAfterMs;
    this.detail = detail;
  }
}

/**
 * A token bound to a key (RFC 9449 DPoP, RFC 8705 mTLS: a `cnf` claim) is only good with proof
 * of that key, which a bearer header does not carry: accepting it as a bearer token would let
 * whoever copied it use it. Nor is a token the server says is of another type.
 */
export function assertBearer(cnf: unknown, tokenType: unknown): void {
  if (cnf !== undefined && cnf !== null)
    throw new TokenRejected("invalid_token", "the token is bound to a key (cnf); only bearer tokens are accepted");
  if (typeof tokenType === "string" && tokenType.toLowerCase() !== "bearer")
    throw new TokenRejected("invalid_token", `the token is not a bearer token (token_type ${tokenType})`);
}

/** A failure to get the keys from the server (not a problem of the token). */
export function isFetchFailure(err: unknown): boolean {
  if (err instanceof TokenRejected) return false;
  if (err instanceof joseErrors.JWKSTimeout || err instanceof joseErrors.JWKSInvalid) return true;
  // Network errors, refused addresses (guarded fetch), and jose's "not 200"/"not JSON" (generic).
  return !(err instanceof joseErrors.JOSEError) || err.code === "ERR_JOSE_GENERIC";
}

export function describeFetchFailure(err: unknown): string {
  if (err instanceof joseErrors.JWKSTimeout || (err as { name?: string })?.name === "TimeoutError")
    return "no answer in time";
  return errorMessage(err);
}

/** jose's errors as short descriptions for error_description (never the token itself). */
export function describeJoseError(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return "the token has expired";
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === "aud") return "the token is not meant for this resource (aud)";
    if (err.claim === "iss") return "the token was issued by another issuer";
    if (err.claim === "nbf") return "the token is not valid yet";
    return `the token's ${err.claim} claim is invalid`;
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return "the token's signature is invalid";
  if (err instanceof joseErrors.JWKSNoMatchingKey) return "no key of the issuer matches the token";
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return "the token's signing algorithm is not allowed";
  if (err instanceof joseErrors.JWKSTimeout) return "the issuer's keys could not be fetched in time";
  return "the token is malformed or cannot be verified";
}
