/**
 * The OAuth 2.1 client side of mcpmgr (oauth4webapi): finding the authorization server
 * (OIDC or RFC 8414 discovery, or the remote's 401 → RFC 9728 metadata), dynamic client
 * registration (RFC 7591), the authorization-code request with PKCE S256 and state, the
 * code exchange and refreshes, all with the RFC 8707 resource. No printing, no browser,
 * no storage: the CLI composes those around it.
 */
import * as oauth from "oauth4webapi";
import { McpmgrError } from "../../errors.ts";
import { isLoopbackHost, resolvesInside } from "../addresses.ts";
import type { Fetch } from "../trusted-fetch.ts";

export interface ServerInfo {
  readonly as: oauth.AuthorizationServer;
  /** Found by OIDC discovery (then openid,profile,email are the default scopes). */
  readonly oidc: boolean;
  /** How mcpmgr reaches this server (trusting --thv-ca-bundle); undefined: the global fetch. */
  readonly fetch?: Fetch | undefined;
}

export interface ClientInfo {
  readonly clientId: string;
  readonly clientSecret?: string | undefined;
  /** How the client authenticates at the token endpoint (from registration or the server's metadata). */
  readonly authMethod?: string | undefined;
}

export interface TokenSet {
  readonly accessToken: string;
  readonly refreshToken?: string | undefined;
  /** ms since the epoch; undefined when the server did not say. */
  readonly expiresAt?: number | undefined;
  /** How long the access token was issued for (ms). */
  readonly lifetimeMs?: number | undefined;
}

export interface PendingAuthorization {
  readonly url: URL;
  readonly state: string;
  readonly codeVerifier: string;
  readonly redirectUri: string;
}

/**
 * Per request: a time limit (an authorization server that never answers must not hang
 * mcpmgr), http:// only for loopback authorization servers (local development, tests), and
 * the server's fetch (the CA bundle).
 */
export function requestOptions(
  url: URL,
  fetcher?: Fetch,
): { [oauth.allowInsecureRequests]?: boolean; [oauth.customFetch]?: Fetch; signal: AbortSignal } {
  const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
  return {
    signal: AbortSignal.timeout(15_000),
    ...(url.protocol === "http:" && loopback ? { [oauth.allowInsecureRequests]: true } : {}),
    ...(fetcher ? { [oauth.customFetch]: fetcher } : {}),
  };
}

function failure(what: string, err: unknown, hint: string): McpmgrError {
  const detail =
    err instanceof oauth.ResponseBodyError
      ? `${err.error}${err.error_description ? `: ${err.error_description}` : ""}`
      : err instanceof Error
        ? err.message
        : String(err);
  return new McpmgrError("AUTH_SETUP_FAILED", `${what} failed (${detail})`, {
    hint: untrustedCertificate(detail) ? CA_HINT : hint,
    cause: err,
  });
}

export async function discoverServer(
  issuer: URL,
  options: { legacyDefaults?: boolean; fetch?: Fetch | undefined } = {},
): Promise<ServerInfo> {
  const failures: string[] = [];
  for (const algorithm of ["oidc", "oauth2"] as const) {
    try {
      const response = await oauth.discoveryRequest(issuer, { algorithm, ...requestOptions(issuer, options.fetch) });
      return {
        as: await oauth.processDiscoveryResponse(issuer, response),
        oidc: algorithm === "oidc",
        fetch: options.fetch,
      };
    } catch (err) {
      failures.push(`${algorithm}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (options.legacyDefaults) {
    // MCP 2025-03-26 §2.3.3: without metadata, /authorize, /token and /register on the server's origin.
    const base = issuer.origin;
    return {
      as: {
        issuer: base,
        authorization_endpoint: `${base}/authorize`,
        token_endpoint: `${base}/token`,
        registration_endpoint: `${base}/register`,
      },
      oidc: false,
      fetch: options.fetch,
    };
  }
  throw new McpmgrError(
    "AUTH_SETUP_FAILED",
    `discovery of the authorization server ${issuer.href} failed (${failures.join("; ")})`,
    {
      hint: untrustedCertificate(failures.join(" "))
        ? CA_HINT
        : "check --remote-auth-issuer, or give --remote-auth-authorize-url and --remote-auth-token-url",
    },
  );
}

const CA_HINT = "the server's certificate is not trusted: give its CA (PEM) with --thv-ca-bundle";

/** Whether a fetch failed on the server's certificate (then --thv-ca-bundle is the way out). */
function untrustedCertificate(text: string): boolean {
  return /certificate|self[ -]signed|unable to verify/i.test(text);
}

/** Explicit endpoints (non-OIDC OAuth): an authorization server described by hand. */
export function explicitServer(authorize: URL, token: URL, fetcher?: Fetch): ServerInfo {
  return {
    as: { issuer: token.origin, authorization_endpoint: authorize.href, token_endpoint: token.href },
    oidc: false,
    fetch: fetcher,
  };
}

export interface ChallengeDiscovery {
  readonly issuer: URL;
  /** No RFC 9728 document (MCP 2025-03-26): default endpoints on the issuer when it has no metadata. */
  readonly legacy?: boolean;
  /** The resource identifier the remote names itself by (sent as RFC 8707 resource). */
  readonly resource?: string;
  readonly scopes?: readonly string[];
}

/**
 * Asks the remote without credentials; a 401 naming `resource_metadata` (RFC 9728) leads
 * to its authorization server. undefined: the remote does not ask for authentication.
 */
export async function discoverFromRemote(target: URL, fetcher: Fetch = fetch): Promise<ChallengeDiscovery | undefined> {
  const probe = await fetcher(target, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "mcpmgr-auth-probe", version: "1" },
      },
    }),
    signal: AbortSignal.timeout(15_000),
  }).catch((err: unknown) => {
    throw new McpmgrError(
      "UPSTREAM_UNREACHABLE",
      `cannot reach ${target.href} to see whether it needs authentication: ${err instanceof Error ? err.message : String(err)}`,
      { hint: "check --target-uri" },
    );
  });
  await probe.body?.cancel();
  if (probe.status !== 401) return undefined;
  return discoverFromChallenge(probe.headers.get("www-authenticate") ?? "", target, fetcher);
}

/** The scopes a Bearer challenge asks for (RFC 6750 scope="…"), if any. */
export function challengeScopes(challenge: string): string[] | undefined {
  const text = /scope="([^"]*)"/i.exec(challenge)?.[1];
  return text === undefined ? undefined : text.split(" ").filter(Boolean);
}

/**
 * A URL the remote (not the user) chose — its metadata, its authorization server and that
 * server's endpoints: https (http only on loopback), and not inside the local network unless
 * the remote itself is there. Anything else would let a hostile server point mcpmgr (and the
 * user's browser) at local services or other schemes.
 */
export async function assertRemoteChosenUrl(text: string, what: string, target: URL): Promise<URL> {
  let url: URL;
  try {
    url = new URL(text, target);
  } catch {
    throw new McpmgrError("AUTH_SETUP_FAILED", `the remote named an invalid URL as its ${what}`, {
      hint: "give --remote-auth-issuer (or the authorize and token URLs) yourself",
    });
  }
  const loopback = isLoopbackHost(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) {
    throw new McpmgrError(
      "AUTH_SETUP_FAILED",
      `refusing ${url.protocol}//${url.host} as the remote's ${what}: only https:// (or http:// on loopback)`,
      { hint: "give --remote-auth-issuer yourself if you trust it" },
    );
  }
  const targetInside = (await resolvesInside(target.hostname)).inside;
  if (!targetInside && (await resolvesInside(url.hostname)).inside) {
    throw new McpmgrError(
      "AUTH_SETUP_FAILED",
      `refusing ${url.host} as the remote's ${what}: a public server named an address inside this network`,
      { hint: "give --remote-auth-issuer yourself if you trust it" },
    );
  }
  return url;
}

/** From a remote's Bearer challenge to its authorization server (RFC 9728, or the 2025-03-26 defaults). */
export async function discoverFromChallenge(
  challenge: string,
  target: URL,
  fetcher: Fetch = fetch,
): Promise<ChallengeDiscovery> {
  const metadataText = /resource_metadata="([^"]+)"/i.exec(challenge)?.[1];
  const scopeText = /scope="([^"]*)"/i.exec(challenge)?.[1];
  // RFC 9728: the URL the challenge names, else the path-suffixed then the root well-known URL.
  const candidates = metadataText
    ? [await assertRemoteChosenUrl(metadataText, "protected-resource metadata", target)]
    : [
        new URL(`/.well-known/oauth-protected-resource${target.pathname.replace(/\/$/, "")}`, target),
        new URL("/.well-known/oauth-protected-resource", target),
      ];
  let document: { resource?: string; authorization_servers?: string[]; scopes_supported?: string[] } | undefined;
  const failures: string[] = [];
  for (const url of candidates) {
    try {
      const response = await fetcher(url, {
        headers: { accept: "application/json" },
        redirect: "manual",
        signal: AbortSignal.timeout(15_000),
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      document = (await response.json()) as NonNullable<typeof document>;
      break;
    } catch (err) {
      failures.push(`${url.href}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (document === undefined) {
    if (metadataText) {
      throw new McpmgrError(
        "AUTH_SETUP_FAILED",
        `the remote asks for authentication, but its protected-resource metadata could not be read (${failures.join("; ")})`,
        {
          hint: "give --remote-auth-issuer (or --remote-auth-authorize-url and --remote-auth-token-url)",
        },
      );
    }
    // MCP 2025-03-26 servers have no RFC 9728 document: their own origin is the authorization server.
    return {
      issuer: new URL(target.origin),
      ...(scopeText ? { scopes: scopeText.split(" ").filter(Boolean) } : {}),
      legacy: true,
    };
  }
  const issuerText = document.authorization_servers?.[0];
  if (typeof issuerText !== "string")
    throw new McpmgrError(
      "AUTH_SETUP_FAILED",
      `the remote's protected-resource metadata names no authorization server`,
      { hint: "give --remote-auth-issuer" },
    );
  // RFC 9728 §3.3: the document must be about this resource. Otherwise a hostile server could
  // claim another server's identity and have mcpmgr send it that server's token.
  if (document.resource !== undefined && !sameResource(document.resource, target)) {
    throw new McpmgrError(
      "AUTH_SETUP_FAILED",
      `the remote's protected-resource metadata is about ${document.resource}, not ${target.origin}${target.pathname}`,
      {
        hint: "the remote server is misconfigured or impersonating another; give --remote-auth-resource and --remote-auth-issuer only if you trust it",
      },
    );
  }
  const issuer = await assertRemoteChosenUrl(issuerText, "authorization server", target);
  const scopes = scopeText ? scopeText.split(" ").filter(Boolean) : document.scopes_supported;
  return { issuer, ...(document.resource ? { resource: document.resource } : {}), ...(scopes ? { scopes } : {}) };
}

/**
 * Whether the metadata's resource covers the target: same origin, and the target's path at
 * or under the resource's path (a server may name its whole origin as the resource). Another
 * origin is never accepted.
 */
export function sameResource(resource: string, target: URL): boolean {
  try {
    const url = new URL(resource);
    const path = (p: string) => p.replace(/\/+$/, "");
    const base = path(url.pathname);
    const wanted = path(target.pathname);
    return url.origin === target.origin && (base === "" || wanted === base || wanted.startsWith(`${base}/`));
  } catch {
    return false;
  }
}

/**
 * The endpoints a server's metadata names: always https (http on loopback) — the
 * authorization URL goes to the user's browser; and, when the remote chose the server, the
 * same address rules as the URLs that led to it.
 */
export async function assertServerEndpoints(server: ServerInfo, target: URL, remoteChosen: boolean): Promise<void> {
  for (const [what, text] of [
    ["authorization endpoint", server.as.authorization_endpoint],
    ["token endpoint", server.as.token_endpoint],
    ["registration endpoint", server.as.registration_endpoint],
  ] as const) {
    if (typeof text !== "string") continue;
    if (remoteChosen) {
      await assertRemoteChosenUrl(text, what, target);
      continue;
    }
    const url = URL.canParse(text) ? new URL(text) : undefined;
    if (
      url === undefined ||
      !(url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHost(url.hostname)))
    ) {
      throw new McpmgrError("AUTH_SETUP_FAILED", `the authorization server's ${what} is not an https:// URL`, {
        hint: "check --remote-auth-issuer (http:// is accepted on loopback only)",
      });
    }
  }
}

/**
 * The scopes to request (MCP authorization, scope selection): the user's own
 * (--remote-auth-scopes); else what the remote asked for when it sent mcpmgr here — its
 * challenge's `scope`, else its metadata's `scopes_supported` (both in `found.scopes`); else
 * openid,profile,email from an OIDC server; else none (the server's default).
 */
export function requestedScopes(
  given: readonly string[] | undefined,
  found: ChallengeDiscovery | undefined,
  server: ServerInfo,
): readonly string[] {
  return given ?? found?.scopes ?? (server.oidc ? ["openid", "profile", "email"] : []);
}

/** RFC 7591: a public client using PKCE, for this redirect URI. */
export async function registerClient(server: ServerInfo, redirectUri: string): Promise<ClientInfo> {
  if (!server.as.registration_endpoint) {
    throw new McpmgrError("AUTH_SETUP_FAILED", `${server.as.issuer} does not offer dynamic client registration`, {
      hint: "register a client there and pass --remote-auth-client-id (and its secret)",
    });
  }
  try {
    const response = await oauth.dynamicClientRegistrationRequest(
      server.as,
      {
        client_name: "mcpmgr",
        redirect_uris: [redirectUri],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      },
      requestOptions(new URL(server.as.registration_endpoint), server.fetch),
    );
    // Read by hand: servers in the wild omit fields oauth4webapi insists on (client_secret_expires_at).
    const body = (await response.json().catch(() => ({}))) as {
      client_id?: unknown;
      client_secret?: unknown;
      token_endpoint_auth_method?: unknown;
      error?: string;
      error_description?: string;
    };
    if (response.status !== 201 && response.status !== 200)
      throw new Error(`HTTP ${response.status}${body.error ? ` ${body.error}: ${body.error_description ?? ""}` : ""}`);
    if (typeof body.client_id !== "string" || body.client_id === "") throw new Error("the response has no client_id");
    return {
      clientId: body.client_id,
      ...(typeof body.client_secret === "string" ? { clientSecret: body.client_secret } : {}),
      ...(typeof body.token_endpoint_auth_method === "string" ? { authMethod: body.token_endpoint_auth_method } : {}),
    };
  } catch (err) {
    throw failure("dynamic client registration", err, "pass --remote-auth-client-id for a client registered by hand");
  }
}

export async function startAuthorization(
  server: ServerInfo,
  client: ClientInfo,
  options: { redirectUri: string; scopes: readonly string[]; resource?: string | undefined },
): Promise<PendingAuthorization> {
  if (!server.as.authorization_endpoint)
    throw new McpmgrError("AUTH_SETUP_FAILED", `${server.as.issuer} has no authorization endpoint`, {
      hint: "give --remote-auth-authorize-url",
    });
  const codeVerifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(server.as.authorization_endpoint);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", client.clientId);
  url.searchParams.set("redirect_uri", options.redirectUri);
  url.searchParams.set("state", state);
  url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(codeVerifier));
  url.searchParams.set("code_challenge_method", "S256");
  if (options.scopes.length > 0) url.searchParams.set("scope", options.scopes.join(" "));
  if (options.resource) url.searchParams.set("resource", options.resource);
  return { url, state, codeVerifier, redirectUri: options.redirectUri };
}

/**
 * client_secret_basic with RFC 6749 §2.3.1's form encoding of id and secret, which leaves
 * `-`, `.`, `_` and `*` as they are (oauth4webapi escapes more, and servers that compare the
 * decoded-by-Base64 value literally then refuse ids like "my-client").
 */
function basicAuth(clientSecret: string): oauth.ClientAuth {
  const form = (value: string) => new URLSearchParams({ v: value }).toString().slice(2);
  return (_as, client, _body, headers) => {
    headers.set("authorization", `Basic ${btoa(`${form(client.client_id)}:${form(clientSecret)}`)}`);
  };
}

/**
 * client_secret_basic unless the client was registered for _post, or the server only supports
 * _post; a client without a secret is public (client_id in the body). The one place that
 * decides how mcpmgr authenticates as a client (the OAuth flow and token exchange).
 */
export function clientAuth(server: ServerInfo, client: ClientInfo): oauth.ClientAuth {
  if (client.clientSecret === undefined) return oauth.None();
  const supported = server.as.token_endpoint_auth_methods_supported;
  const method =
    client.authMethod ??
    (supported && !supported.includes("client_secret_basic") && supported.includes("client_secret_post")
      ? "client_secret_post"
      : "client_secret_basic");
  if (method === "none") return oauth.None();
  return method === "client_secret_post" ? oauth.ClientSecretPost(client.clientSecret) : basicAuth(client.clientSecret);
}

function tokenSet(response: oauth.TokenEndpointResponse, previousRefresh?: string): TokenSet {
  return {
    accessToken: response.access_token,
    refreshToken: response.refresh_token ?? previousRefresh,
    expiresAt: typeof response.expires_in === "number" ? Date.now() + response.expires_in * 1000 : undefined,
    lifetimeMs: typeof response.expires_in === "number" ? response.expires_in * 1000 : undefined,
  };
}

/** The redirect came back: check state (and iss when the server sends it), then exchange the code. */
export async function completeAuthorization(
  server: ServerInfo,
  client: ClientInfo,
  pending: PendingAuthorization,
  callback: URL,
  resource?: string,
): Promise<TokenSet> {
  const oauthClient: oauth.Client = { client_id: client.clientId };
  let params: URLSearchParams;
  try {
    params = oauth.validateAuthResponse(server.as, oauthClient, callback, pending.state);
  } catch (err) {
    throw failure("the authorization response", err, "start the login again");
  }
  try {
    const response = await oauth.authorizationCodeGrantRequest(
      server.as,
      oauthClient,
      clientAuth(server, client),
      params,
      pending.redirectUri,
      pending.codeVerifier,
      {
        ...(resource ? { additionalParameters: { resource } } : {}),
        ...requestOptions(new URL(server.as.token_endpoint ?? server.as.issuer), server.fetch),
      },
    );
    return tokenSet(await oauth.processAuthorizationCodeResponse(server.as, oauthClient, response));
  } catch (err) {
    throw failure("the token request", err, "start the login again; check the client's redirect URI and secret");
  }
}

/** Why a refresh failed: the grant is gone (log in again) or it may work later (retry). */
export class RefreshFailed extends Error {
  readonly revoked: boolean;
  constructor(message: string, revoked: boolean) {
    super(message);
    this.name = "RefreshFailed";
    this.revoked = revoked;
  }
}

export async function refreshTokens(
  server: ServerInfo,
  client: ClientInfo,
  refreshToken: string,
  resource?: string,
): Promise<TokenSet> {
  const oauthClient: oauth.Client = { client_id: client.clientId };
  try {
    const response = await oauth.refreshTokenGrantRequest(
      server.as,
      oauthClient,
      clientAuth(server, client),
      refreshToken,
      {
        ...(resource ? { additionalParameters: { resource } } : {}),
        ...requestOptions(new URL(server.as.token_endpoint ?? server.as.issuer), server.fetch),
      },
    );
    return tokenSet(await oauth.processRefreshTokenResponse(server.as, oauthClient, response), refreshToken);
  } catch (err) {
    if (err instanceof oauth.ResponseBodyError) {
      const revoked = err.status === 400 || err.status === 401;
      throw new RefreshFailed(
        `the refresh was refused (${err.error}${err.error_description ? `: ${err.error_description}` : ""})`,
        revoked,
      );
    }
    throw new RefreshFailed(`the refresh failed (${err instanceof Error ? err.message : String(err)})`, false);
  }
}
