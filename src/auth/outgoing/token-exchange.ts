/**
 * RFC 8693 token exchange (`--token-exchange-*`): the client's own token, validated by the
 * incoming authentication, is exchanged at the security token service for one meant for
 * the remote server; the client's token itself never goes upstream. Exchanged tokens are
 * cached per subject token until shortly before they expire.
 */
import { createHash } from "node:crypto";
import * as oauth from "oauth4webapi";
import type { TokenExchangeSpec } from "../../config/outgoing-auth-spec.ts";
import type { TokenSource } from "./token-source.ts";
import { requestState } from "../request-state.ts";

const GRANT = "urn:ietf:params:oauth:grant-type:token-exchange";
const TOKEN_TYPES = { access_token: "urn:ietf:params:oauth:token-type:access_token", id_token: "urn:ietf:params:oauth:token-type:id_token" } as const;

/** The raw bearer token of an incoming request, kept out of enumerable places. */
const subjectTokens = requestState<string>();

export function rememberSubjectToken(req: Request, token: string): void {
  subjectTokens.set(req, token);
}

export class TokenExchangeFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TokenExchangeFailed";
  }
}

export function tokenExchangeSource(spec: TokenExchangeSpec, options: { onError?: (text: string) => void } = {}): TokenSource {
  const as: oauth.AuthorizationServer = { issuer: spec.url.origin, token_endpoint: spec.url.href };
  const client: oauth.Client = { client_id: spec.clientId ?? "" };
  const auth = spec.clientSecret !== undefined ? oauth.ClientSecretBasic(spec.clientSecret) : oauth.None();
  const insecure = spec.url.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(spec.url.hostname) ? { [oauth.allowInsecureRequests]: true } : {};
  const cache = new Map<string, { value: string; until: number }>();
  return {
    async authorization(incoming) {
      const subject = incoming ? subjectTokens.get(incoming) : undefined;
      if (subject === undefined) throw new TokenExchangeFailed("token exchange needs the client's token: enable incoming authentication (--oidc-issuer)");
      const key = createHash("sha256").update(subject).digest("base64url");
      const hit = cache.get(key);
      if (hit && hit.until > Date.now()) return hit.value;
      const parameters = new URLSearchParams({ subject_token: subject, subject_token_type: TOKEN_TYPES[spec.subjectTokenType], requested_token_type: TOKEN_TYPES.access_token });
      if (spec.audience) parameters.set("audience", spec.audience);
      if (spec.scopes.length > 0) parameters.set("scope", spec.scopes.join(" "));
      let exchanged: oauth.TokenEndpointResponse;
      try {
        const response = await oauth.genericTokenEndpointRequest(as, client, auth, GRANT, parameters, { ...insecure, signal: AbortSignal.timeout(15_000) });
        exchanged = await oauth.processGenericTokenEndpointResponse(as, client, response);
      } catch (err) {
        const detail = err instanceof oauth.ResponseBodyError ? `${err.error}${err.error_description ? `: ${err.error_description}` : ""}` : err instanceof Error ? err.message : String(err);
        options.onError?.(`token exchange failed (${detail})`);
        throw new TokenExchangeFailed(`token exchange failed (${detail})`);
      }
      const value = spec.headerName.toLowerCase() === "authorization" ? `Bearer ${exchanged.access_token}` : exchanged.access_token;
      const lifetime = typeof exchanged.expires_in === "number" ? exchanged.expires_in * 1000 : 60_000;
      cache.set(key, { value, until: Date.now() + Math.max(0, lifetime - 30_000) });
      if (cache.size > 10_000) cache.delete(cache.keys().next().value as string);
      return value;
    },
    async invalidate(refused) {
      for (const [key, entry] of cache) if (entry.value === refused) cache.delete(key);
    },
  };
}
