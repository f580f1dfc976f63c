/**
 * Finding a remote's authorization server: OIDC or RFC 8414 discovery, or the remote's own
 * 401 leading to its RFC 9728 protected-resource metadata; and the checks on every URL a
 * remote chose (scheme, address, the resource it claims to be). Scope selection too, since
 * it depends on what discovery found.
 */
import * as oauth from "oauth4webapi";
import { errorMessage, McpmgrError } from "../../errors.ts";
import { version } from "../../version.ts";
import { isLoopbackHostname } from "../../config/loopback.ts";
import { resolvesInside } from "../addresses.ts";
import type { Fetch } from "../trusted-fetch.ts";
import { CA_HINT, requestOptions, type ServerInfo, untrustedCertificate } from "./oauth-client.ts";

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
        issuerValidated: true,
      };
    } catch (err) {
      failures.push(`${algorithm}: ${errorMessage(err)}`);
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
      issuerValidated: false,
      // The defaults stand for an authorization server at the remote's origin: an `iss` names it or is refused.
      knownIssuer: [base, `${base}/`],
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

/**
 * Explicit endpoints (non-OIDC OAuth): an authorization server described by hand. Its issuer is
 * known nowhere (`--remote-auth-issuer` is for discovery and does not go with these), so an
 * `iss` in the authorization response cannot be checked (`knownIssuer` undefined).
 */
export function explicitServer(authorize: URL, token: URL, fetcher?: Fetch): ServerInfo {
  return {
    as: { issuer: token.origin, authorization_endpoint: authorize.href, token_endpoint: token.href },
    oidc: false,
    fetch: fetcher,
    issuerValidated: false,
  };
}

/** The revision mcpmgr's probe speaks. */
const PROBE_REVISION = "2026-07-28";

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
 * The question is `server/discover`, a complete MCP 2026-07-28 request (headers and `_meta`
 * as that revision wants them, nothing to clean up afterwards): a remote that guards its
 * endpoint answers 401 whatever its revision, and one of the current revision sees a
 * well-formed client.
 */
export async function discoverFromRemote(target: URL, fetcher: Fetch = fetch): Promise<ChallengeDiscovery | undefined> {
  const probe = await fetcher(target, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": PROBE_REVISION,
      "mcp-method": "server/discover",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "server/discover",
      params: {
        _meta: {
          "io.modelcontextprotocol/protocolVersion": PROBE_REVISION,
          "io.modelcontextprotocol/clientCapabilities": {},
          "io.modelcontextprotocol/clientInfo": { name: "mcpmgr", version },
        },
      },
    }),
    signal: AbortSignal.timeout(15_000),
  }).catch((err: unknown) => {
    throw new McpmgrError(
      "UPSTREAM_UNREACHABLE",
      `cannot reach ${target.href} to see whether it needs authentication: ${errorMessage(err)}`,
      { hint: "check the server's URL, your network and DNS" },
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
  const loopback = isLoopbackHostname(url.hostname);
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
      failures.push(`${url.href}: ${errorMessage(err)}`);
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
      `the remote's protected-resource metadata is about ${JSON.stringify(document.resource)}, not ${target.origin}${target.pathname}`,
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
function sameResource(resource: string, target: URL): boolean {
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
      !(url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHostname(url.hostname)))
    ) {
      throw new McpmgrError("AUTH_SETUP_FAILED", `the authorization server's ${what} is not an https:// URL`, {
        hint: "check --remote-auth-issuer (http:// is accepted on loopback only)",
      });
    }
  }
}

/**
 * The scopes to request (MCP authorization, scope selection): the user's own
 * (--remote-auth-scopes), as given; else what the remote asked for when it sent mcpmgr here —
 * its challenge's `scope`, else its metadata's `scopes_supported` (both in `found.scopes`);
 * else openid,profile,email from an OIDC server; else none (the server's default). mcpmgr
 * keeps serving for long and wants a refresh token, so a chosen set gains `offline_access`
 * when the authorization server lists it (MCP 2026-07-28, refresh tokens: only then).
 */
export function requestedScopes(
  given: readonly string[] | undefined,
  found: ChallengeDiscovery | undefined,
  server: ServerInfo,
): readonly string[] {
  if (given) return given;
  const chosen = found?.scopes ?? (server.oidc ? ["openid", "profile", "email"] : []);
  const offline = server.as.scopes_supported?.includes("offline_access") === true;
  return offline && chosen.length > 0 && !chosen.includes("offline_access") ? [...chosen, "offline_access"] : chosen;
}
