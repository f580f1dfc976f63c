/**
 * Which redirects mcpmgr's own checks of a server it runs follow: `run`'s MCP readiness probe
 * (mcp-readiness.ts) and the supervisor's wait for an HTTP server to listen (upstream-http.ts).
 * Only one that keeps the method and body (307, 308) to the same listener, a few times: a server
 * mounted at /mcp/ by a framework that redirects /mcp there, which MCP clients (fetch) follow.
 * Neither check follows one elsewhere: the probe carries the gateway key, and an endpoint that
 * sends its clients to another origin is not served through this proxy.
 */

/** Redirects of the endpoint followed, at most: more is a loop, an endpoint that never answers. */
export const MAX_REDIRECTS = 5;

/** Where a redirect answer points (resolved against `from`); undefined when it is none or has no usable Location. */
export function redirectTarget(response: Response, from: string): URL | undefined {
  if (response.status < 300 || response.status > 399) return undefined;
  const location = response.headers.get("location");
  if (location === null) return undefined;
  try {
    return new URL(location, from);
  } catch {
    return undefined;
  }
}

/** The URL a 307/308 to the same origin as `from` sends the request to; undefined for any other answer. */
export function sameOriginRedirect(response: Response, from: string): string | undefined {
  if (response.status !== 307 && response.status !== 308) return undefined;
  const to = redirectTarget(response, from);
  return to !== undefined && to.origin === new URL(from).origin ? to.href : undefined;
}
