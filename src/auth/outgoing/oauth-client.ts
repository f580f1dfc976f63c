/**
 * The OAuth 2.1 client side of mcpmgr (oauth4webapi): dynamic client registration (RFC 7591,
 * as a native application), the authorization-code request with PKCE S256 and state, the
 * check of the authorization response (state, and the issuer per RFC 9207), the code
 * exchange and refreshes, all with the RFC 8707 resource. Finding the server is
 * discovery.ts; keeping tokens fresh is grant-session.ts. No printing, no browser, no storage.
 */
import * as oauth from "oauth4webapi";
import { errorMessage, McpmgrError } from "../../errors.ts";
import { excerpt } from "../../printable.ts";
import type { Fetch } from "../trusted-fetch.ts";

export interface ServerInfo {
  readonly as: oauth.AuthorizationServer;
  /** Found by OIDC discovery (then openid,profile,email are the default scopes). */
  readonly oidc: boolean;
  /** How mcpmgr reaches this server (trusting --thv-ca-bundle); undefined: the global fetch. */
  readonly fetch?: Fetch | undefined;
  /**
   * Whether `as.issuer` comes from metadata validated against the URL it was fetched from
   * (RFC 8414 §3.3): then it is the issuer an `iss` response parameter must equal, exactly.
   */
  readonly issuerValidated: boolean;
  /**
   * Without validated metadata, the issuer known all the same, in the spellings an `iss` may take
   * (published nowhere, so an origin with or without its trailing slash): for the MCP 2025-03-26
   * defaults, the remote's origin (the authorization server those defaults stand for). Undefined
   * with `issuerValidated` false: no issuer is known (endpoints given by hand), `iss` cannot be checked.
   */
  readonly knownIssuer?: readonly string[] | undefined;
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

/**
 * An authorization server's own words about a refusal (`error`, `error_description`), on one line:
 * they go into mcpmgr's log and errors, and a server (one a remote chose) must not write lines there.
 */
export function serverWords(error: string, description?: string): string {
  return `${excerpt(error, 100)}${description ? `: ${excerpt(description, 300)}` : ""}`;
}

function failure(what: string, err: unknown, hint: string): McpmgrError {
  const detail =
    err instanceof oauth.ResponseBodyError
      ? serverWords(err.error, err.error_description)
      : excerpt(errorMessage(err), 500);
  return new McpmgrError("AUTH_SETUP_FAILED", `${what} failed (${detail})`, {
    hint: untrustedCertificate(detail) ? CA_HINT : hint,
    cause: err,
  });
}

export const CA_HINT = "the server's certificate is not trusted: give its CA (PEM) with --thv-ca-bundle";

/** Whether a fetch failed on the server's certificate (then --thv-ca-bundle is the way out). */
export function untrustedCertificate(text: string): boolean {
  return /certificate|self[ -]signed|unable to verify/i.test(text);
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
        // MCP 2026-07-28 (SEP-837): say what kind of client this is, or OpenID servers assume
        // "web" and refuse a loopback redirect. mcpmgr runs on the user's machine: native.
        application_type: "native",
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
      throw new Error(
        `HTTP ${response.status}${typeof body.error === "string" ? ` ${serverWords(body.error, typeof body.error_description === "string" ? body.error_description : undefined)}` : ""}`,
      );
    if (typeof body.client_id !== "string" || body.client_id === "") throw new Error("the response has no client_id");
    // It is logged and sent back in URLs: an id with line breaks or escapes is no id, but an attempt
    // to write lines of its own into mcpmgr's log (a fake login URL among them).
    if (/[\u0000-\u001f\u007f-\u009f]/.test(body.client_id))
      throw new Error("the response's client_id holds control characters");
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
  // MCP authorization: a server whose metadata does not list S256 may ignore the code challenge,
  // and then a code caught on its way to the loopback callback can be redeemed by whoever caught it.
  if (server.issuerValidated && !(server.as.code_challenge_methods_supported ?? []).includes("S256"))
    throw new McpmgrError(
      "AUTH_SETUP_FAILED",
      `the authorization server ${server.as.issuer} does not say it supports PKCE (S256 in code_challenge_methods_supported)`,
      { hint: "MCP requires PKCE: use an authorization server that supports it, or give its endpoints by hand" },
    );
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

/**
 * The redirect came back: RFC 9207 and MCP 2026-07-28 first — an `iss` present must equal the
 * issuer recorded from the server's validated metadata, by simple string comparison (no
 * trailing-slash or case folding), or, without metadata, the issuer known otherwise
 * (`knownIssuer`); only endpoints given by hand leave it unchecked. A server that advertises
 * `authorization_response_iss_parameter_supported` must send it — then the state, and only
 * then an error the server reported (which, from the wrong issuer, is not shown at all).
 * Returns the parameters to redeem; nothing is sent anywhere before this passes.
 */
export function validateAuthorizationResponse(
  server: ServerInfo,
  client: ClientInfo,
  pending: PendingAuthorization,
  callback: URL,
): URLSearchParams {
  const issuer = callback.searchParams.get("iss");
  const expected = server.issuerValidated ? [server.as.issuer] : server.knownIssuer;
  if (!server.issuerValidated) {
    // oauth4webapi compares `iss` with `as.issuer`, which here is a stand-in: checked below against
    // the issuer known, if any, and then left out.
    callback = new URL(callback);
    callback.searchParams.delete("iss");
  }
  if (issuer !== null && expected !== undefined && !expected.includes(issuer))
    throw new McpmgrError(
      "AUTH_SETUP_FAILED",
      `the authorization response names issuer ${JSON.stringify(issuer)}, not ${expected[0]}; it was refused`,
      {
        hint: "another authorization server answered (a mix-up attack, or a misconfigured server): start the login again",
      },
    );
  if (issuer === null && server.issuerValidated && server.as.authorization_response_iss_parameter_supported === true)
    throw new McpmgrError(
      "AUTH_SETUP_FAILED",
      `the authorization response has no issuer although ${server.as.issuer} says it always sends one; it was refused`,
      { hint: "start the login again; if it keeps happening the authorization server is misconfigured" },
    );
  try {
    return oauth.validateAuthResponse(server.as, { client_id: client.clientId }, callback, pending.state);
  } catch (err) {
    if (err instanceof oauth.AuthorizationResponseError)
      throw new McpmgrError(
        "AUTH_SETUP_FAILED",
        `the OAuth login was refused (${serverWords(err.error, err.error_description)})`,
        { hint: "check the account and the client's permissions, then try again" },
      );
    throw failure("the authorization response", err, "start the login again");
  }
}

/** Redeems a validated authorization response for tokens (with the PKCE verifier and the resource). */
export async function exchangeAuthorizationCode(
  server: ServerInfo,
  client: ClientInfo,
  pending: PendingAuthorization,
  params: URLSearchParams,
  resource?: string,
): Promise<TokenSet> {
  const oauthClient: oauth.Client = { client_id: client.clientId };
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
      throw new RefreshFailed(`the refresh was refused (${serverWords(err.error, err.error_description)})`, revoked);
    }
    throw new RefreshFailed(`the refresh failed (${errorMessage(err)})`, false);
  }
}
