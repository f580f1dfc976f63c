/**
 * Origin and Host validation (MCP transport security; DNS-rebinding protection).
 * A browser page on another site may send requests to a local server; when the
 * proxy is bound to loopback it therefore only answers requests whose Host names a
 * loopback address (a rebound DNS name fails this) and whose Origin, if any, is a
 * loopback origin. Bound to another address, an Origin must match the Host the
 * client used (or a trusted X-Forwarded-Host). Clients that send no Origin
 * (every non-browser MCP client) are unaffected.
 * First of all a request must name exactly one Host (RFC 9112 §3.2): without one (HTTP/1.0)
 * the request has no absolute URL to route by, and with two, this check and the URL could
 * each believe a different one.
 */
import type { Middleware } from "../proxy/handler.ts";
import { JsonRpcCode, jsonRpcError } from "../proxy/jsonrpc.ts";

export interface OriginGuardOptions {
  /** The address the proxy listens on. */
  readonly listenHost: string;
  readonly trustProxyHeaders: boolean;
}

const loopbackNames: ReadonlySet<string> = new Set(["localhost", "127.0.0.1", "::1", "[::1]"]);

export function isLoopbackHost(host: string): boolean {
  const name = host.toLowerCase();
  return loopbackNames.has(name) || name.endsWith(".localhost") || /^127(\.\d{1,3}){3}$/.test(name);
}

/** "example.com:8080" → "example.com", "[::1]:80" → "[::1]". */
function hostnameOf(hostHeader: string): string {
  if (hostHeader.startsWith("[")) return hostHeader.slice(0, hostHeader.indexOf("]") + 1);
  const colon = hostHeader.lastIndexOf(":");
  return colon === -1 ? hostHeader : hostHeader.slice(0, colon);
}

function originHost(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    return url.protocol === "http:" || url.protocol === "https:" ? url.host : undefined;
  } catch {
    return undefined;
  }
}

const badHost = (why: string) => jsonRpcError(400, JsonRpcCode.invalidRequest, `Bad Request: ${why}`);

export function originGuard(options: OriginGuardOptions): Middleware {
  const loopbackOnly = isLoopbackHost(options.listenHost);
  const forbidden = (why: string) => jsonRpcError(403, JsonRpcCode.serverError, `Forbidden: ${why}`);

  return (next) => (req, ctx) => {
    const headers = req.headers;
    const host = headers.get("host");
    // Bun gives a request without Host a relative URL, and joins repeated Hosts with a comma.
    if (!req.url.startsWith("http")) return badHost("the Host header is required");
    if (host?.includes(",")) return badHost("send one Host header");
    const origin = headers.get("origin");
    if (loopbackOnly) {
      if (host !== null && !isLoopbackHost(hostnameOf(host)))
        return forbidden("Host header does not name this local server");
      if (origin === null) return next(req, ctx);
      const from = originHost(origin);
      if (from === undefined || !isLoopbackHost(hostnameOf(from)))
        return forbidden("requests from this Origin are not allowed");
      return next(req, ctx);
    }
    if (origin === null) return next(req, ctx);
    const from = originHost(origin)?.toLowerCase();
    const publicHost =
      (options.trustProxyHeaders ? headers.get("x-forwarded-host")?.split(",")[0]?.trim() : undefined) ?? host;
    if (from !== undefined && (from === publicHost?.toLowerCase() || isLoopbackHost(hostnameOf(from))))
      return next(req, ctx);
    return forbidden("requests from this Origin are not allowed");
  };
}
