/**
 * Who a verified token speaks for (verifier.ts, introspection.ts): the principal made of its
 * claims, and the spellings of the issuer a token or document may use for it.
 */
import { TokenRejected } from "./verifier-errors.ts";

export interface Principal {
  /** `sub`, else `client_id` (client-credentials tokens). */
  readonly subject: string;
  readonly scopes: readonly string[];
  /** Every claim of the token (JWT payload or introspection answer). */
  readonly claims: Readonly<Record<string, unknown>>;
}

/** The issuer with and without a trailing slash: servers differ in which they put in `iss`. */
export function issuerForms(issuer: URL): string[] {
  const text = issuer.href;
  return [...new Set([text, text.replace(/\/$/, "")])];
}

function scopesOf(claims: Record<string, unknown>): string[] {
  if (typeof claims.scope === "string") return claims.scope.split(" ").filter(Boolean);
  if (Array.isArray(claims.scp)) return claims.scp.filter((s): s is string => typeof s === "string");
  return [];
}

export function principalFromClaims(claims: Record<string, unknown>): Principal {
  const subject =
    typeof claims.sub === "string" ? claims.sub : typeof claims.client_id === "string" ? claims.client_id : "";
  if (subject === "") throw new TokenRejected("invalid_token", "the token names no subject");
  return Object.freeze({ subject, scopes: Object.freeze(scopesOf(claims)), claims: Object.freeze({ ...claims }) });
}
