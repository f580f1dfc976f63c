/**
 * A real OAuth 2.1 / OIDC authorization server for the auth tests: oidc-provider on
 * loopback, with dynamic registration, PKCE, refresh tokens, resource indicators issuing
 * JWT (or opaque) access tokens, introspection and client credentials.
 */
import { createServer } from "node:http";
import { createServer as createTlsServer } from "node:https";
import { exportJWK, generateKeyPair } from "jose";
import Provider, { type Configuration } from "oidc-provider";
import { freePort } from "./processes.ts";

/** The resource (audience) whose access tokens are JWTs, and one whose tokens are opaque. */
export const JWT_RESOURCE = "https://mcp.example.test/mcp";
export const OPAQUE_RESOURCE = "https://opaque.example.test/mcp";

export const CLIENTS = {
  /** client_credentials: mints tokens for the resources above. */
  service: { client_id: "service-client", client_secret: "service-secret" },
  /** the same, for a second caller (tests of what one caller must not reach of another's). */
  otherService: { client_id: "other-service-client", client_secret: "other-service-secret" },
  /** introspects tokens (the protected proxy's own credentials). */
  introspector: { client_id: "introspector", client_secret: "introspector-secret" },
  /** a pre-registered confidential client for mcpmgr's authorization-code flow. */
  mcpmgr: { client_id: "mcpmgr-client", client_secret: "mcpmgr-secret" },
  /** a pre-registered public client (PKCE only). */
  mcpmgrPublic: { client_id: "mcpmgr-public" },
  /** exchanges tokens (RFC 8693) for the remote's audience. */
  exchanger: { client_id: "exchanger", client_secret: "exchanger-secret" },
  /** the same, with an id and a secret that RFC 6749 §2.3.1 form-encoding changes (or, for - and ., must not). */
  exchangerEncoded: { client_id: "exchanger-2.b", client_secret: "s3 cr+t:%/&=~" },
} as const;

/** The callback mcpmgr's login listens on in tests (a port no other test uses). */
export const CALLBACK_PORTS = [18661, 18662, 18663] as const;

export interface AuthServer {
  readonly issuer: string;
  /** fetch that trusts the server's certificate when it serves https. */
  readonly fetch: (url: string | URL, init?: RequestInit) => Promise<Response>;
  readonly provider: Provider;
  /** Token endpoint requests so far, by grant_type. */
  readonly grants: Map<string, number>;
  /**
   * Every request so far as the provider understood it — `request`: its URL, Authorization header,
   * parameters and authenticated client, as JSON text; `answer`: what /token and /reg answered —
   * for tests of what reaches which server.
   */
  readonly seen: { method: string; path: string; request: string; answer: string | undefined }[];
  /**
   * An access token from client_credentials for `resource` with `scope` (as `client`, default the
   * service client); `dpop`: bound to a fresh key by a DPoP proof (RFC 9449).
   */
  token(options?: {
    resource?: string;
    scope?: string;
    client?: "service" | "otherService";
    dpop?: boolean;
  }): Promise<string>;
  /**
   * The options that protect an mcpmgr endpoint with this issuer's JWTs for `audience`: plain HTTP
   * on loopback, so the insecure-HTTP and private-IP opt-ins are part of it.
   */
  oidcArgs(audience?: string): string[];
  /**
   * The same for opaque tokens of OPAQUE_RESOURCE, introspected (RFC 7662) as the introspector
   * client; its secret is left to the caller, given literally or in a file.
   */
  introspectionArgs(): string[];
  stop(): Promise<void>;
}

export async function startAuthServer(
  options: {
    keys?: JsonWebKeyWithKid[];
    port?: number;
    accessTokenTtl?: number;
    tls?: { cert: string; key: string };
  } = {},
): Promise<AuthServer> {
  const port = options.port ?? (await freePort());
  const issuer = `${options.tls ? "https" : "http"}://127.0.0.1:${port}`;
  const tls = options.tls;
  const trusted = (url: string | URL, init: RequestInit = {}) =>
    fetch(url, tls ? ({ ...init, tls: { ca: tls.cert } } as RequestInit) : init);
  const keys = options.keys ?? [await signingKey("key-1")];
  const configuration: Configuration = {
    clients: [
      {
        ...CLIENTS.service,
        grant_types: ["client_credentials"],
        redirect_uris: [],
        response_types: [],
        scope: "openid mcp:read mcp:write",
      },
      {
        ...CLIENTS.otherService,
        grant_types: ["client_credentials"],
        redirect_uris: [],
        response_types: [],
        scope: "openid mcp:read mcp:write",
      },
      { ...CLIENTS.introspector, grant_types: [], redirect_uris: [], response_types: [] },
      {
        ...CLIENTS.mcpmgr,
        grant_types: ["authorization_code", "refresh_token"],
        redirect_uris: CALLBACK_PORTS.map((port) => `http://127.0.0.1:${port}/callback`),
        response_types: ["code"],
        scope: "openid profile email offline_access mcp:read mcp:write",
      },
      {
        ...CLIENTS.mcpmgrPublic,
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code", "refresh_token"],
        redirect_uris: CALLBACK_PORTS.map((port) => `http://127.0.0.1:${port}/callback`),
        response_types: ["code"],
      },
      {
        ...CLIENTS.exchanger,
        grant_types: ["urn:ietf:params:oauth:grant-type:token-exchange"],
        redirect_uris: [],
        response_types: [],
      },
      {
        ...CLIENTS.exchangerEncoded,
        grant_types: ["urn:ietf:params:oauth:grant-type:token-exchange"],
        redirect_uris: [],
        response_types: [],
      },
    ],
    // Refresh tokens for every authorization-code client that may use them (no offline_access dance).
    issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) =>
      client.grantTypeAllowed("refresh_token"),
    ttl: {
      AccessToken: options.accessTokenTtl ?? 300,
      ClientCredentials: options.accessTokenTtl ?? 300,
      RefreshToken: 3600,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
    },
    jwks: { keys },
    claims: { openid: ["sub"], profile: ["name"], email: ["email", "email_verified"] },
    scopes: ["openid", "offline_access", "mcp:read", "mcp:write"],
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      // Sender-constrained tokens (RFC 9449), which a bearer-only resource must refuse.
      dPoP: { enabled: true },
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
  const grants = new Map<string, number>();
  const seen: AuthServer["seen"] = [];
  provider.use(async (ctx, next) => {
    await next();
    const oidc = (ctx as unknown as { oidc?: { params?: unknown; client?: { clientId?: string } } }).oidc;
    seen.push({
      method: ctx.method,
      path: ctx.path,
      request: JSON.stringify({
        url: ctx.url,
        authorization: ctx.headers.authorization,
        params: oidc?.params,
        client: oidc?.client?.clientId,
      }),
      answer: ctx.path === "/token" || ctx.path === "/reg" ? JSON.stringify(ctx.body) : undefined,
    });
    if (ctx.path === "/token" && ctx.method === "POST") {
      const type =
        (ctx as unknown as { oidc?: { params?: { grant_type?: string } } }).oidc?.params?.grant_type ?? "unknown";
      grants.set(type, (grants.get(type) ?? 0) + 1);
    }
  });
  // RFC 8693 for the exchanger client: a valid access token of ours (subject) becomes one
  // for the requested audience, signed with the same key.
  const signingJwk = keys[0] as JsonWebKeyWithKid;
  provider.registerGrantType(
    "urn:ietf:params:oauth:grant-type:token-exchange",
    // oidc-provider's context type is loose here
    async (ctx: any) => {
      const params = ctx.oidc.params as Record<string, string | undefined>;
      const { jwtVerify, createLocalJWKSet, SignJWT, importJWK } = await import("jose");
      const publicKeys = createLocalJWKSet({ keys: keys.map(({ d, p, q, dp, dq, qi, ...pub }) => pub) });
      let subject: string;
      try {
        const { payload } = await jwtVerify(params.subject_token ?? "", publicKeys, { issuer });
        subject = String(payload.sub);
      } catch {
        ctx.status = 400;
        ctx.body = { error: "invalid_grant", error_description: "subject_token is not valid" };
        return;
      }
      const now = Math.floor(Date.now() / 1000);
      const token = await new SignJWT({
        sub: subject,
        client_id: ctx.oidc.client.clientId,
        act: { sub: ctx.oidc.client.clientId },
        scope: params.scope ?? "mcp:read",
      })
        .setProtectedHeader({ alg: "RS256", kid: signingJwk.kid, typ: "at+jwt" })
        .setIssuer(issuer)
        .setAudience(params.audience ?? JWT_RESOURCE)
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(await importJWK(signingJwk, "RS256"));
      ctx.body = {
        access_token: token,
        issued_token_type: "urn:ietf:params:oauth:token-type:access_token",
        token_type: "Bearer",
        expires_in: 300,
      };
    },
    ["subject_token", "subject_token_type", "requested_token_type", "audience", "scope", "resource"],
  );
  const listener = tls
    ? createTlsServer({ cert: tls.cert, key: tls.key }, provider.callback())
    : createServer(provider.callback());
  await new Promise<void>((resolve) => listener.listen(port, "127.0.0.1", resolve));
  const oidcArgs = (audience = JWT_RESOURCE) => [
    "--oidc-issuer",
    issuer,
    "--oidc-audience",
    audience,
    "--oidc-insecure-allow-http",
    "--jwks-allow-private-ip",
  ];
  return {
    issuer,
    fetch: trusted,
    provider,
    grants,
    seen,
    async token({ resource = JWT_RESOURCE, scope = "mcp:read", client = "service", dpop = false } = {}) {
      const { client_id, client_secret } = CLIENTS[client];
      const response = await trusted(`${issuer}/token`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: `Basic ${btoa(`${client_id}:${client_secret}`)}`,
          ...(dpop ? { dpop: await dpopProof("POST", `${issuer}/token`) } : {}),
        },
        body: new URLSearchParams({ grant_type: "client_credentials", resource, scope }),
      });
      const body = (await response.json()) as { access_token?: string; error?: string; error_description?: string };
      if (!body.access_token) throw new Error(`token request failed: ${body.error}: ${body.error_description}`);
      return body.access_token;
    },
    oidcArgs,
    introspectionArgs: () => [
      ...oidcArgs(OPAQUE_RESOURCE),
      "--oidc-introspection-url",
      `${issuer}/token/introspection`,
      "--oidc-client-id",
      CLIENTS.introspector.client_id,
    ],
    stop: () => new Promise<void>((resolve) => listener.close(() => resolve())),
  };
}

const LOGIN_URLS = /^(http:\/\/127\.0\.0\.1:\d+\/auth\?\S+)$/gm;

/** The login (authorization) URLs mcpmgr printed in `output`, one per line, in order. */
export function loginUrls(output: string): string[] {
  return [...output.matchAll(LOGIN_URLS)].map((match) => match[1] as string);
}

/**
 * Plays the user for as long as it runs: each login URL `output()` shows is taken once, completed
 * (completeLogin), or only opened and left when `complete` says no for it.
 */
export function playUser(output: () => string, complete: (login: string) => boolean = () => true) {
  const done = new Set<string>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      for (const login of loginUrls(output())) {
        if (done.has(login)) continue;
        done.add(login);
        if (complete(login)) await completeLogin(login).catch(() => 0);
        else
          await fetch(login, { redirect: "manual" }).then(
            (r) => r.body?.cancel(),
            () => {},
          );
      }
      await Bun.sleep(50);
    }
  })();
  return {
    done,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

/**
 * Plays the user in a browser: follows the authorization URL mcpmgr printed through
 * oidc-provider's login and consent pages (any login is accepted) with a cookie jar, up to
 * the redirect to mcpmgr's callback, which it then requests. Returns the callback's status.
 */
export async function completeLogin(
  authorizeUrl: string,
  user = "alice",
  fetcher: (url: string, init?: RequestInit) => Promise<Response> = fetch,
): Promise<number> {
  const cookies = new Map<string, string>();
  const cookieHeader = () => [...cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  let url = authorizeUrl;
  let method = "GET";
  let body: URLSearchParams | undefined;
  for (let step = 0; step < 20; step++) {
    const response = await fetcher(url, {
      method,
      redirect: "manual",
      headers: { cookie: cookieHeader(), ...(body ? { "content-type": "application/x-www-form-urlencoded" } : {}) },
      ...(body ? { body } : {}),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ""] = line.split(";");
      const at = pair.indexOf("=");
      cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location) {
      url = new URL(location, url).href;
      method = "GET";
      body = undefined;
      if (/^http:\/\/127\.0\.0\.1:\d+\/callback/.test(url)) return (await fetch(url)).status;
      continue;
    }
    const html = await response.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (!action) throw new Error(`login got stuck at ${url} (HTTP ${response.status}): ${html.slice(0, 300)}`);
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    url = new URL(action.replaceAll("&amp;", "&"), url).href;
    method = "POST";
    body = new URLSearchParams(
      prompt === "login" ? { prompt, login: user, password: "any" } : { prompt: prompt ?? "consent" },
    );
  }
  throw new Error("login did not reach the callback in 20 steps");
}

/** A DPoP proof (RFC 9449) for one request, signed by a fresh key. */
async function dpopProof(method: string, url: string): Promise<string> {
  const { SignJWT } = await import("jose");
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  return new SignJWT({ htm: method, htu: url, jti: crypto.randomUUID() })
    .setProtectedHeader({ alg: "ES256", typ: "dpop+jwt", jwk: await exportJWK(publicKey) })
    .setIssuedAt()
    .sign(privateKey);
}

export type JsonWebKeyWithKid = Awaited<ReturnType<typeof exportJWK>> & { kid: string; alg: string; use: string };

/** A fresh RS256 signing key (private JWK) with the given kid. */
export async function signingKey(kid: string): Promise<JsonWebKeyWithKid> {
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: "RS256", use: "sig" };
}
