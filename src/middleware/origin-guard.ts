/**
 * Origin and Host validation (MCP transport security; DNS-rebinding protection).
 * A browser page on another site may send requests to a local server, and a page whose DNS
 * name was rebound to this machine's address even does so as its own origin. So a request is
 * served only when its Host is a name this listener answers to (host-names.ts: loopback names
 * on a loopback listener; beyond loopback also IP addresses and this machine's names; on both,
 * the names of --allowed-hosts), and its Origin, if any, is a loopback origin or the Host the
 * client used (or a trusted X-Forwarded-Host) when that is such a name too. Clients that send no
 * Origin (every non-browser MCP client) are unaffected by the Origin rule.
 * First of all a request must name exactly one Host (RFC 9112 §3.2), a valid one: without one
 * (HTTP/1.0) the request has no absolute URL to route by, with two, this check and the URL could
 * each believe a different one, and with one the URL cannot hold, the URL cannot be read.
 */
import type { Middleware } from "../proxy/handler.ts";
import { JsonRpcCode, jsonRpcError } from "../proxy/jsonrpc.ts";
import { hostNamePolicy, hostnameOf, isLoopbackHost } from "./host-names.ts";

export interface OriginGuardOptions {
  /** The address the proxy listens on. */
  readonly listenHost: string;
  readonly trustProxyHeaders: boolean;
  /** `--allowed-hosts`, normalized: more names the listener answers to. */
  readonly allowedHosts: readonly string[];
  /** This machine's names (default: host-names.ts machineNames()); for tests. */
  readonly machineNames?: readonly string[];
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
const forbidden = (why: string) => jsonRpcError(403, JsonRpcCode.serverError, `Forbidden: ${why}`);

/** The refusal of a Host the listener does not answer to: which name, and how to allow it. */
function unknownHost(hostHeader: string): Response {
  const name = JSON.stringify(hostnameOf(hostHeader).slice(0, 255));
  return forbidden(`this server does not answer to the host name ${name}; start it with --allowed-hosts to allow it`);
}

export function originGuard(options: OriginGuardOptions): Middleware {
  const loopbackOnly = isLoopbackHost(options.listenHost);
  const names = hostNamePolicy({
    beyondLoopback: !loopbackOnly,
    allowed: options.allowedHosts,
    ...(options.machineNames ? { machine: options.machineNames } : {}),
  });
  // The name clients use for this listener, remembered: they send the same Host every time.
  let lastHost: string | undefined;

  /** The Origin names the host the client used (the Host, or a trusted X-Forwarded-Host), and that name is allowed. */
  const sameAllowedHost = (from: string, host: string | null, headers: Headers): boolean => {
    const forwarded = options.trustProxyHeaders ? headers.get("x-forwarded-host")?.split(",")[0]?.trim() : undefined;
    if (from !== (forwarded ?? host)?.toLowerCase()) return false;
    if (forwarded === undefined) return true; // the Host itself, checked before
    return loopbackOnly ? names.userAllowed(forwarded) : names.answersTo(forwarded);
  };

  return (next) => (req, ctx) => {
    const headers = req.headers;
    const host = headers.get("host");
    // Bun gives a request without Host a relative URL, and joins repeated Hosts with a comma.
    if (!req.url.startsWith("http")) return badHost("the Host header is required");
    if (host?.includes(",")) return badHost("send one Host header");
    if (host !== null && host !== lastHost) {
      // A Host the name checks accept whose port is no number (or past 65535), or with more after an IPv6
      // literal or a `%`: Bun still makes it the request's URL, which then cannot be parsed, and every
      // later `new URL(req.url)` (the RFC 9728 resource, the challenge) would fail the request with a 500
      // and an error line; forwarded, it would be the upstream's X-Forwarded-Host.
      if (!URL.canParse(req.url)) return badHost("the Host header is not a valid host name and port");
      if (loopbackOnly) {
        // The checks past the loopback names run only for a request they would otherwise refuse.
        if (!isLoopbackHost(hostnameOf(host)) && !names.userAllowed(host)) return unknownHost(host);
      } else if (!names.answersTo(host)) return unknownHost(host);
      lastHost = host;
    }
    const origin = headers.get("origin");
    if (origin === null) return next(req, ctx);
    const from = originHost(origin)?.toLowerCase();
    if (from !== undefined && (isLoopbackHost(hostnameOf(from)) || sameAllowedHost(from, host, headers)))
      return next(req, ctx);
    return forbidden("requests from this Origin are not allowed");
  };
}
