/**
 * A real OAuth 2.1 / OIDC authorization server for the auth tests: oidc-provider on
 * loopback, with dynamic registration, PKCE, refresh tokens, resource indicators issuing
 * JWT (or opaque) access tokens, introspection and client credentials.
 */
import { createServer } from "node:http";
import { exportJWK, generateKeyPair } from "jose";
import Provider, { type Configuration } from "oidc-provider";
import { freePort } from "./processes.ts";

/** The resource (audience) whose access tokens are JWTs, and one whose tokens are opaque. */
export const JWT_RESOURCE = "https://mcp.example.test/mcp";
export const OPAQUE_RESOURCE = "https://opaque.example.test/mcp";

export const CLIENTS = {
  /** client_credentials: mints tokens for the resources above. */
  service: { client_id: "service-client", client_secret: "service-secret" },
  /** introspects tokens (the protected proxy's own credentials). */
  introspector: { client_id: "introspector", client_secret: "introspector-secret" },
} as const;

export interface AuthServer {
  readonly issuer: string;
  readonly provider: Provider;
  /** An access token from client_credentials for `resource` with `scope`. */
  token(options?: { resource?: string; scope?: string }): Promise<string>;
  stop(): Promise<void>;
}

export async function startAuthServer(options: { keys?: JsonWebKeyWithKid[]; port?: number; accessTokenTtl?: number } = {}): Promise<AuthServer> {
  const port = options.port ?? (await freePort());
  const issuer = `http://127.0.0.1:${port}`;
  const keys = options.keys ?? [await signingKey("key-1")];
  const configuration: Configuration = {
    clients: [
      { ...CLIENTS.service, grant_types: ["client_credentials"], redirect_uris: [], response_types: [], scope: "openid mcp:read mcp:write" },
      { ...CLIENTS.introspector, grant_types: [], redirect_uris: [], response_types: [] },
    ],
    jwks: { keys },
    scopes: ["openid", "offline_access", "mcp:read", "mcp:write"],
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => JWT_RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => ({
          scope: "mcp:read mcp:write",
          audience: resource,
          accessTokenTTL: options.accessTokenTtl ?? 300,
          accessTokenFormat: resource === OPAQUE_RESOURCE ? "opaque" : "jwt",
          ...(resource === OPAQUE_RESOURCE ? {} : { jwt: { sign: { alg: "RS256" } } }),
        }),
      },
    },
    pkce: { required: () => true },
  };
  const provider = new Provider(issuer, configuration);
  const listener = createServer(provider.callback());
  await new Promise<void>((resolve) => listener.listen(port, "127.0.0.1", resolve));
  return {
    issuer,
    provider,
    async token({ resource = JWT_RESOURCE, scope = "mcp:read" } = {}) {
      const response = await fetch(`${issuer}/token`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: `Basic ${btoa(`${CLIENTS.service.client_id}:${CLIENTS.service.client_secret}`)}`,
        },
        body: new URLSearchParams({ grant_type: "client_credentials", resource, scope }),
      });
      const body = (await response.json()) as { access_token?: string; error?: string; error_description?: string };
      if (!body.access_token) throw new Error(`token request failed: ${body.error}: ${body.error_description}`);
      return body.access_token;
    },
    stop: () => new Promise<void>((resolve) => listener.close(() => resolve())),
  };
}

export type JsonWebKeyWithKid = Awaited<ReturnType<typeof exportJWK>> & { kid: string; alg: string; use: string };

/** A fresh RS256 signing key (private JWK) with the given kid. */
export async function signingKey(kid: string): Promise<JsonWebKeyWithKid> {
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: "RS256", use: "sig" };
}
