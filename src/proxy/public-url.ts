/**
 * The URL clients should use for a path the upstream advertised (the legacy SSE
 * `endpoint` event). It is relative unless a trusted reverse proxy told us its public
 * scheme and host, and that host is a name the listener answers to; `--endpoint-prefix`
 * (or a trusted X-Forwarded-Prefix) goes first. Forwarded values that do not look like
 * what they claim to be are ignored, so a hostile header cannot inject a URL.
 *
 * The endpoint always points at the proxy. One the upstream places outside its own origin
 * (another host, port or scheme, written absolute, scheme-relative `//host/x`, with
 * backslashes, …: whatever the URL parser resolves elsewhere) has no place there: the proxy
 * cannot forward to it (it forwards to the upstream only), and handed on as it is, a client
 * following it would post its messages, and its token for mcpmgr, past every policy of the
 * proxy. Such an endpoint, or one that does not parse, is refused (undefined).
 */

export interface PublicUrlOptions {
  readonly endpointPrefix: string | undefined;
  readonly trustProxyHeaders: boolean;
  /**
   * The names the listener answers to (middleware/host-names.ts, the rule of its Host and of an
   * Origin's forwarded host): the only forwarded hosts an absolute endpoint may name. Without it,
   * none is: the endpoint stays relative, which clients resolve against the URL they used.
   */
  readonly answersTo?: ((host: string) => boolean) | undefined;
}

const validProto = /^https?$/i;
const validHost = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/;
const validPort = /^\d{1,5}$/;

/**
 * A forwarded host worth believing: the pattern, and one a URL can hold (the pattern allows any five
 * digits as a port, so `localhost:99999` passes it; built into a URL, it made the RFC 9728 resource
 * throw, a 500 and an error line for each request without a token). Read only on the answers that name
 * a URL (a 401, the document, an `endpoint` event, a redirect), never per forwarded request.
 */
function usableHost(host: string): boolean {
  return validHost.test(host) && URL.canParse(`http://${host}`);
}
const validPrefix = /^\/(?!\/)[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/;

export function publicEndpoint(
  advertised: string,
  target: URL,
  req: Request,
  options: PublicUrlOptions,
): string | undefined {
  const resolved = URL.canParse(advertised, target.href) ? new URL(advertised, target) : undefined;
  if (resolved === undefined || resolved.origin !== target.origin) return undefined;
  // A path that starts with "//" (the upstream's `http://upstream//evil/x`) would read as
  // scheme-relative once it stands alone: "/." keeps it a path on the proxy.
  const path = resolved.pathname.replace(/^\/\//, "/.//") + resolved.search;

  const headers = req.headers;
  const trusted = options.trustProxyHeaders;
  const forwardedPrefix = trusted ? firstValue(headers.get("x-forwarded-prefix")) : undefined;
  const prefix =
    options.endpointPrefix ??
    (forwardedPrefix && validPrefix.test(forwardedPrefix) ? forwardedPrefix.replace(/\/+$/, "") : "");

  // A name the listener does not answer to (a client's header a reverse proxy passed on) is not
  // believed, as for the RFC 9728 resource (publicOrigin below).
  const host = trusted ? firstValue(headers.get("x-forwarded-host")) : undefined;
  if (host === undefined || !usableHost(host) || options.answersTo?.(host) !== true) return prefix + path;
  const protoHeader = firstValue(headers.get("x-forwarded-proto"));
  const proto = protoHeader && validProto.test(protoHeader) ? protoHeader.toLowerCase() : "http";
  const portHeader = firstValue(headers.get("x-forwarded-port"));
  const hasPort = /:\d+$/.test(host) && !host.endsWith("]");
  const defaultPort = proto === "https" ? "443" : "80";
  const port =
    !hasPort && portHeader && validPort.test(portHeader) && portHeader !== defaultPort ? `:${portHeader}` : "";
  return `${proto}://${host}${port}${prefix}${path}`;
}

/** Proxies append to X-Forwarded-* lists; the first entry is the client-facing one. */
function firstValue(value: string | null): string | undefined {
  if (value === null) return undefined;
  const first = value.split(",")[0]?.trim();
  return first === "" ? undefined : first;
}

/**
 * The origin clients reach this proxy at: a trusted reverse proxy's X-Forwarded-Proto/Host
 * when valid and a name the listener answers to (`answersTo`: the rule its Host and an Origin's
 * forwarded host are held to, middleware/origin-guard.ts), else the request's own (its Host was
 * checked by the origin guard). Any other forwarded name, from a reverse proxy that passes a
 * client's header on, must not become the URL an answer tells clients to use.
 */
export function publicOrigin(
  req: Request,
  trustProxyHeaders: boolean,
  answersTo: (host: string) => boolean = () => false,
): string {
  const own = new URL(req.url).origin;
  if (!trustProxyHeaders) return own;
  const host = firstValue(req.headers.get("x-forwarded-host"));
  if (host === undefined || !usableHost(host) || !answersTo(host)) return own;
  const protoHeader = firstValue(req.headers.get("x-forwarded-proto"));
  const proto = protoHeader && validProto.test(protoHeader) ? protoHeader.toLowerCase() : "http";
  return `${proto}://${host}`;
}
