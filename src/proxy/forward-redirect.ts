/**
 * An upstream's redirect (3xx with a Location) as the transparent forwarder hands it on
 * (forward.ts). The client follows a Location, and a 307/308 makes it send its message again
 * there: one naming the upstream's own address would send the client straight to the server,
 * past the proxy's authentication, `--tools`, Cedar and audit (and to a container's or a remote's
 * address the client has no business with); one on another origin is a place the proxy does not
 * forward to at all. So, as for the legacy SSE `endpoint` (public-url.ts, security.md S16), a
 * Location on the upstream's origin becomes the same path on the proxy (a trailing-slash redirect
 * keeps working, through the proxy), and any other is refused: 502, and one warning per origin in
 * the log.
 */
import { JsonRpcCode, jsonRpcError } from "./jsonrpc.ts";
import { publicEndpoint, type PublicUrlOptions } from "./public-url.ts";

/** Distinct foreign origins warned about: an upstream that names a new one each time cannot flood the log. */
const MAX_ORIGINS_WARNED = 8;

/** What a Location built with trusted forwarded headers depends on (public-url.ts reads these). */
const FORWARDED_VARY = "X-Forwarded-Host, X-Forwarded-Proto, X-Forwarded-Port, X-Forwarded-Prefix";

export interface RedirectOptions extends PublicUrlOptions {
  readonly onWarning?: ((text: string) => void) | undefined;
}

/** The redirect statuses whose Location a client follows (304 Not Modified names none). */
export function isRedirect(status: number): boolean {
  return status >= 300 && status < 400 && status !== 304;
}

export function redirectRewriter(
  options: RedirectOptions,
): (upstream: Response, upstreamUrl: string, req: Request) => Response {
  const warned = new Set<string>();
  return (upstream, upstreamUrl, req) => {
    const location = upstream.headers.get("location");
    if (location === null) return upstream;
    const from = new URL(upstreamUrl);
    const onProxy = publicEndpoint(location, from, req, options);
    if (onProxy !== undefined) {
      upstream.headers.set("location", onProxy);
      // A 301 or 308 may be kept by a cache in front (RFC 9111 §4.2.2); with trusted forwarded headers
      // its Location was built from them, so one client's spelling must not be handed to the others.
      if (options.trustProxyHeaders) upstream.headers.append("vary", FORWARDED_VARY);
      return upstream;
    }
    void upstream.body?.cancel().catch(() => {});
    const origin = URL.canParse(location, from.href) ? new URL(location, from).origin : undefined;
    const named = origin === undefined ? "a Location that is not a URL" : `a Location on ${origin}`;
    if (options.onWarning !== undefined && warned.size < MAX_ORIGINS_WARNED && !warned.has(named)) {
      warned.add(named);
      options.onWarning(
        `the MCP server redirected a request to ${named}, outside ${from.origin}; the redirect was refused with 502 (a client following it would bypass this proxy)`,
      );
    }
    return jsonRpcError(
      502,
      JsonRpcCode.internalError,
      `mcpmgr refused the MCP server's redirect: it named ${named}, outside the server (${from.origin}) and outside this proxy`,
    );
  };
}
