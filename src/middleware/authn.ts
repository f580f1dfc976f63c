/**
 * Incoming authentication (OIDC bearer tokens), ARCHITECTURE.md §3.3: the verifier turns a token
 * into a Principal or a rejection; this middleware turns a rejection into the RFC 6750
 * challenge (401, or 403 for insufficient_scope) naming the RFC 9728 metadata, serves that
 * metadata document itself, and records the principal for later middleware (authorization,
 * audit) through `principalOf(req)` (caller.ts). The client's token never goes further: the forwarder
 * and the bridge drop `Authorization`, and a request that also carries it in its query (RFC 6750 §2.3
 * `access_token`, which the forwarder would pass on in the URL) is refused here.
 */
import type { IncomingAuthSpec } from "../config/incoming-auth-spec.ts";
import { bearerChallenge, metadataPaths, metadataUrl, protectedResourceMetadata } from "../auth/metadata.ts";
import {
  TokenRejected,
  VerificationUnavailable,
  type Principal,
  type TokenVerifier,
} from "../auth/incoming/verifier.ts";
import { rememberSubjectToken } from "../auth/outgoing/subject-token.ts";
import { pathOf, type Middleware } from "../proxy/handler.ts";
import { JsonRpcCode, jsonRpcError } from "../proxy/jsonrpc.ts";
import { setPrincipal } from "./caller.ts";
import { markDenied } from "./denials.ts";
import { listenerNames } from "./host-names.ts";
import { cameFromGateway } from "./gateway-credential.ts";
import { publicOrigin } from "../proxy/public-url.ts";

export interface AuthnOptions {
  readonly spec: IncomingAuthSpec;
  readonly verifier: TokenVerifier;
  /** The MCP endpoint's path on this proxy (/mcp, /sse, a remote's own path). */
  readonly endpointPath: string;
  readonly trustProxyHeaders: boolean;
  /** The address the proxy listens on (default loopback): with `allowedHosts`, which forwarded names are its own. */
  readonly listenHost?: string;
  /** `--allowed-hosts`, normalized: a trusted X-Forwarded-Host must be one of the names the listener answers to. */
  readonly allowedHosts?: readonly string[];
  /** Told once per name (a few names at most) about a forwarded name the document does not follow. */
  readonly warn?: (text: string) => void;
}

/** Distinct forwarded names warned about: a client that sends made-up names cannot flood the log. */
const MAX_FORWARDED_NAMES_WARNED = 4;

/**
 * A CORS preflight: OPTIONS naming the method it asks about, and no body (a browser never sends one).
 * An OPTIONS with a body is a request like any other: passed on unauthenticated, it would carry a
 * JSON-RPC message past authentication and the policies to a server that may read it.
 */
function isCorsPreflight(req: Request): boolean {
  if (req.method !== "OPTIONS" || !req.headers.has("access-control-request-method")) return false;
  const length = req.headers.get("content-length");
  return req.body === null && !req.headers.has("transfer-encoding") && (length === null || length.trim() === "0");
}

/**
 * Whether the URL carries an RFC 6750 §2.3 `access_token` parameter (its name in any case or
 * percent-encoding). The proxy accepts tokens in the header only, and forwards the URL as it is: a
 * token there would reach the upstream (a remote server, a workload) and every log of URLs on the way.
 */
function tokenInQuery(url: string): boolean {
  const query = url.indexOf("?");
  if (query === -1) return false;
  // `;` and a second `?` count as separators too: a client that appends `?access_token=` to a URL that
  // already has a query, or a server that still splits on `;` (older Python, Go), would otherwise put
  // the token past this check into the URL the upstream and its logs get.
  for (const name of new URLSearchParams(url.slice(query + 1).replace(/[;?]/g, "&")).keys())
    if (name.length === 12 && name.toLowerCase() === "access_token") return true;
  return false;
}

/**
 * RFC 6750 §2.2's way of sending the token: a form-encoded body (that media type, whatever follows a
 * `;`). No MCP message is one (they are JSON), and the forwarder streams bodies on unread, so a body
 * carrying the token would reach the upstream; the media type is refused rather than every such body
 * read to look for the parameter.
 */
const formEncoded = /^\s*application\/x-www-form-urlencoded\s*(;|$)/i;

export function bearerAuthentication(options: AuthnOptions): Middleware {
  const { spec } = options;
  const issuer = spec.issuer.href.replace(/\/$/, "") === spec.issuer.origin ? spec.issuer.origin : spec.issuer.href;
  // The names the origin guard lets through as Host: the only forwarded names the document may name.
  const names = options.trustProxyHeaders
    ? listenerNames(options.listenHost ?? "127.0.0.1", options.allowedHosts ?? [])
    : undefined;
  // A reverse proxy that rewrites Host and names its public name only in X-Forwarded-Host (nginx with
  // `proxy_set_header X-Forwarded-Host`) needs that name in --allowed-hosts: say so, or its clients are
  // sent to the listener's own address with nothing in the log to tell why.
  const warned = new Set<string>();
  const answersTo = (host: string) => {
    if (names?.answersTo(host) === true) return true;
    const name = host.toLowerCase();
    if (options.warn !== undefined && warned.size < MAX_FORWARDED_NAMES_WARNED && !warned.has(name)) {
      warned.add(name);
      options.warn(
        `X-Forwarded-Host '${name}' is not a name this listener answers to: the RFC 9728 resource and the 401 challenge name the listener's own address instead (hint: if '${name}' is the reverse proxy's public name, add it to --allowed-hosts, or set --resource-url)`,
      );
    }
    return false;
  };
  const resourceFor = (req: Request): URL =>
    spec.resourceUrl ?? new URL(options.endpointPath, publicOrigin(req, options.trustProxyHeaders, answersTo));
  // The document names the resource from the request's Host (and trusted X-Forwarded-*) unless
  // --resource-url fixes it: a cache in front (it may be kept 300 s) must not hand one client's
  // spelling to another, so it is told what the answer depends on (RFC 9110 §12.5.5).
  const metadataHeaders: Record<string, string> = { "cache-control": "max-age=300" };
  if (spec.resourceUrl === undefined)
    metadataHeaders.vary = options.trustProxyHeaders ? "Host, X-Forwarded-Host, X-Forwarded-Proto" : "Host";
  const wellKnown = new Set([
    ...metadataPaths(options.endpointPath),
    ...(spec.resourceUrl ? metadataPaths(spec.resourceUrl.pathname) : []),
  ]);

  const challenge = (req: Request, status: 400 | 401 | 403, error?: TokenRejected) => {
    const header = bearerChallenge({
      resourceMetadata: metadataUrl(resourceFor(req)),
      scopes: spec.scopesSupported,
      ...(error ? { error: error.error, description: error.message } : {}),
    });
    const message = error
      ? `${status === 400 ? "Bad Request" : "Unauthorized"}: ${error.message}`
      : "Unauthorized: a bearer token is required";
    return markDenied(
      Response.json(
        { jsonrpc: "2.0", id: null, error: { code: -32001, message } },
        { status, headers: { "www-authenticate": header } },
      ),
      { reason: message, unauthenticated: true },
    );
  };

  return (next) => async (req, ctx) => {
    const path = pathOf(req.url);
    if (wellKnown.has(path)) {
      if (req.method !== "GET" && req.method !== "HEAD")
        return new Response(null, { status: 405, headers: { allow: "GET, HEAD" } });
      return Response.json(
        protectedResourceMetadata({ resource: resourceFor(req).href, issuer, scopes: spec.scopesSupported }),
        { headers: metadataHeaders },
      );
    }
    // RFC 6750 §3.1: a token sent another way than the header is an invalid_request (400), with or
    // without one in the header too (a preflight as well): passed on, the URL would carry it upstream.
    if (tokenInQuery(req.url))
      return challenge(
        req,
        400,
        new TokenRejected(
          "invalid_request",
          "an access token in the URL's query (access_token) is not accepted: send it in the Authorization header only",
        ),
      );
    const contentType = req.headers.get("content-type");
    if (contentType !== null && formEncoded.test(contentType))
      return challenge(
        req,
        400,
        new TokenRejected(
          "invalid_request",
          "a form-encoded body is not accepted (an access token there would be passed on; MCP messages are JSON): send the token in the Authorization header only",
        ),
      );
    // CORS preflights carry no credentials by design (and get none added upstream).
    if (isCorsPreflight(req)) return next(req, ctx);
    // The group's gateway, with the installation's gateway key: it authenticated its own caller.
    if (cameFromGateway(req)) return next(req, ctx);
    const header = req.headers.get("authorization");
    const match = header === null ? null : /^Bearer[ \t]+([A-Za-z0-9\-._~+/]+=*)[ \t]*$/i.exec(header);
    if (match === null) {
      // RFC 6750 §3.1: another scheme (Basic, Digest…) is a request without authentication as far as
      // Bearer goes, answered with the bare challenge and no error code; a Bearer credential that is
      // not a token's syntax (empty, two words) is an invalid token.
      return header === null || !/^Bearer(?:[ \t]|$)/i.test(header)
        ? challenge(req, 401)
        : challenge(req, 401, new TokenRejected("invalid_token", "the Bearer credential is not a token"));
    }
    let principal: Principal;
    try {
      principal = await options.verifier.verify(match[1] as string);
    } catch (err) {
      if (err instanceof TokenRejected)
        return challenge(
          req,
          err.error === "insufficient_scope" ? 403 : err.error === "invalid_request" ? 400 : 401,
          err,
        );
      // Fail closed, at once, without telling the client its token is bad (it may be fine).
      if (err instanceof VerificationUnavailable)
        return markDenied(
          jsonRpcError(503, JsonRpcCode.internalError, `Service Unavailable: ${err.message}`, {
            headers: { "retry-after": String(Math.max(1, Math.ceil(err.retryAfterMs / 1000))) },
          }),
          { reason: err.message, unauthenticated: true },
        );
      throw err;
    }
    setPrincipal(req, principal);
    // Kept (not forwarded) for RFC 8693 token exchange, when configured.
    rememberSubjectToken(req, match[1] as string);
    return next(req, ctx);
  };
}
