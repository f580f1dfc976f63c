/**
 * RFC 8693 token exchange (`--token-exchange-*`): the client's own token, validated by the
 * incoming authentication, is exchanged at the security token service for one meant for
 * the remote server; the client's token itself never goes upstream. Exchanged tokens are
 * cached per subject token until shortly before they expire.
 */
import { createHash } from "node:crypto";
import * as oauth from "oauth4webapi";
import type { TokenExchangeSpec } from "../../config/outgoing-auth-spec.ts";
import { FORCED_RENEWAL_INTERVAL_MS } from "./grant-session.ts";
import type { TokenSource } from "./token-source.ts";
import { clientAuth, requestOptions, type ServerInfo, serverWords } from "./oauth-client.ts";
import { subjectTokenOf } from "./subject-token.ts";
import type { Fetch } from "../trusted-fetch.ts";
import { errorMessage } from "../../errors.ts";
import { GATEWAY_KEY_PREFIX } from "../../state/gateway-guard.ts";

const GRANT = "urn:ietf:params:oauth:grant-type:token-exchange";
const TOKEN_TYPES = {
  access_token: "urn:ietf:params:oauth:token-type:access_token",
  id_token: "urn:ietf:params:oauth:token-type:id_token",
} as const;

class TokenExchangeFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TokenExchangeFailed";
  }
}

/**
 * No --token-exchange-client-id: the request carries no client authentication at all (no
 * empty client_id). oauth4webapi insists on a client_id in its client object; this one is
 * never sent, since this authentication method writes nothing.
 */
const ANONYMOUS: { client: oauth.Client; auth: oauth.ClientAuth } = {
  client: { client_id: "mcpmgr-anonymous" },
  auth: () => {},
};

export function tokenExchangeSource(
  spec: TokenExchangeSpec,
  options: {
    onError?: (text: string) => void;
    fetch?: Fetch | undefined;
    /** Each exchanged token as it is about to be sent (audit redacts it: workload/outgoing-auth.ts). */
    onToken?: (token: string) => void;
  } = {},
): TokenSource {
  // The exchange endpoint described as a bare authorization server, so the client
  // authentication is the OAuth flow's own (RFC 6749 form-encoded Basic, or public).
  const server: ServerInfo = {
    as: { issuer: spec.url.origin, token_endpoint: spec.url.href },
    oidc: false,
    fetch: options.fetch,
    issuerValidated: false,
  };
  const { client, auth } =
    spec.clientId === undefined
      ? ANONYMOUS
      : {
          client: { client_id: spec.clientId },
          auth: clientAuth(server, { clientId: spec.clientId, clientSecret: spec.clientSecret }),
        };
  const cache = new Map<string, { value: string; token: string; until: number }>();
  /** When a refusal last forced a new exchange, per subject token: at most one per interval. */
  const forced = new Map<string, number>();
  return {
    async authorization(incoming) {
      const subject = incoming ? subjectTokenOf(incoming) : undefined;
      if (subject === undefined)
        throw new TokenExchangeFailed(
          // Incoming authentication is required with token exchange, so a request here without a client's
          // token came in with the gateway key: the group's gateway never passes its callers' tokens on.
          incoming?.headers.get("authorization")?.startsWith(`Bearer ${GATEWAY_KEY_PREFIX}`)
            ? "token exchange needs the caller's own token, and a call through the group's gateway carries none " +
                "(the gateway never passes its callers' tokens on); call this workload directly with a token"
            : "token exchange needs the client's token: enable incoming authentication (--oidc-issuer)",
        );
      const key = createHash("sha256").update(subject).digest("base64url");
      const hit = cache.get(key);
      if (hit && hit.until > Date.now()) {
        options.onToken?.(hit.token);
        return hit.value;
      }
      const parameters = new URLSearchParams({
        subject_token: subject,
        subject_token_type: TOKEN_TYPES[spec.subjectTokenType],
        requested_token_type: TOKEN_TYPES.access_token,
      });
      if (spec.audience) parameters.set("audience", spec.audience);
      if (spec.scopes.length > 0) parameters.set("scope", spec.scopes.join(" "));
      let exchanged: oauth.TokenEndpointResponse;
      try {
        const response = await oauth.genericTokenEndpointRequest(
          server.as,
          client,
          auth,
          GRANT,
          parameters,
          requestOptions(spec.url, server.fetch),
        );
        exchanged = await oauth.processGenericTokenEndpointResponse(server.as, client, response);
      } catch (err) {
        const detail =
          err instanceof oauth.ResponseBodyError ? serverWords(err.error, err.error_description) : errorMessage(err);
        options.onError?.(`token exchange failed (${detail})`);
        throw new TokenExchangeFailed(`token exchange failed (${detail})`);
      }
      const value =
        spec.headerName.toLowerCase() === "authorization" ? `Bearer ${exchanged.access_token}` : exchanged.access_token;
      const lifetime = typeof exchanged.expires_in === "number" ? exchanged.expires_in * 1000 : 60_000;
      cache.set(key, { value, token: exchanged.access_token, until: Date.now() + Math.max(0, lifetime - 30_000) });
      if (cache.size > 10_000) cache.delete(cache.keys().next().value as string);
      // Learned before it is sent: a remote that echoes it in its answer finds it already redacted.
      options.onToken?.(exchanged.access_token);
      return value;
    },
    async invalidate(refused) {
      // A remote that refuses every exchanged token must not cost the exchange endpoint one or two
      // exchanges per request: the token a refusal forced is kept for FORCED_RENEWAL_INTERVAL_MS.
      const now = Date.now();
      for (const [key, entry] of cache) {
        if (entry.value !== refused) continue;
        const last = forced.get(key);
        if (last !== undefined && now - last < FORCED_RENEWAL_INTERVAL_MS) continue;
        forced.set(key, now);
        if (forced.size > 10_000) forced.delete(forced.keys().next().value as string);
        cache.delete(key);
      }
    },
  };
}
