/**
 * Header hygiene for the transparent forwarder.
 * - Hop-by-hop headers (RFC 9110 §7.6.1) and every header named in `Connection`
 *   describe one connection and are never forwarded, in either direction.
 * - The client's credentials (Authorization, Proxy-Authorization) are never sent
 *   upstream: a token minted for mcpmgr must not reach a server it was not meant for.
 * - Host comes from the upstream URL (fetch sets it), X-Forwarded-* describe the
 *   client. Client-supplied X-Forwarded-* are kept only with --trust-proxy-headers.
 * - Accept-Encoding is dropped so SSE arrives uncompressed: the proxy injects
 *   keep-alive comments and may rewrite the legacy `endpoint` event.
 */

const hopByHop: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "proxy-authenticate",
  "proxy-authorization",
]);

const neverUpstream: ReadonlySet<string> = new Set(["host", "authorization", "content-length", "accept-encoding"]);

const forwarded: ReadonlySet<string> = new Set([
  "x-forwarded-for",
  "x-forwarded-proto",
  "x-forwarded-host",
  "x-forwarded-port",
  "x-forwarded-prefix",
]);

export interface ForwardingInfo {
  readonly remoteAddress: string;
  readonly trustProxyHeaders: boolean;
}

function connectionTokens(headers: Headers): ReadonlySet<string> | undefined {
  const value = headers.get("connection");
  if (value === null) return undefined;
  return new Set(value.split(",").map((token) => token.trim().toLowerCase()));
}

export function upstreamRequestHeaders(req: Request, info: ForwardingInfo): Headers {
  const source = req.headers;
  const named = connectionTokens(source);
  const out = new Headers();
  for (const [name, value] of source) {
    if (hopByHop.has(name) || neverUpstream.has(name) || named?.has(name)) continue;
    if (forwarded.has(name) && !info.trustProxyHeaders) continue;
    out.append(name, value);
  }
  const priorFor = info.trustProxyHeaders ? source.get("x-forwarded-for") : null;
  if (info.remoteAddress !== "") {
    out.set("x-forwarded-for", priorFor ? `${priorFor}, ${info.remoteAddress}` : info.remoteAddress);
  }
  if (!out.has("x-forwarded-proto")) out.set("x-forwarded-proto", "http");
  const host = source.get("host");
  if (host !== null && !out.has("x-forwarded-host")) out.set("x-forwarded-host", host);
  return out;
}

export function downstreamResponseHeaders(upstream: Response): Headers {
  const source = upstream.headers;
  const named = connectionTokens(source);
  // fetch decoded a compressed body already, so its encoding and length no longer apply.
  const decoded = source.has("content-encoding");
  const out = new Headers();
  for (const [name, value] of source) {
    if (hopByHop.has(name) || named?.has(name)) continue;
    if (decoded && (name === "content-encoding" || name === "content-length")) continue;
    out.append(name, value);
  }
  return out;
}
