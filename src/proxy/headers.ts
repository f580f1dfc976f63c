/**
 * Header hygiene for the transparent forwarder.
 * - Hop-by-hop headers (RFC 9110 §7.6.1) and every header named in `Connection`
 *   describe one connection and are never forwarded, in either direction.
 * - The client's credentials (Authorization, Proxy-Authorization) are never sent
 *   upstream: a token minted for mcpmgr must not reach a server it was not meant for.
 * - Host comes from the upstream URL (fetch sets it), X-Forwarded-* describe the
 *   client. Client-supplied X-Forwarded-* and Forwarded (RFC 7239) are kept only with
 *   --trust-proxy-headers: otherwise a client could describe itself as anyone.
 * - Mcp-Session-Id is dropped from a request that names MCP 2026-07-28 or later (`sessionless`):
 *   that revision has no sessions and says to ignore the header.
 * - Accept-Encoding is dropped so SSE arrives uncompressed: the proxy injects
 *   keep-alive comments and may rewrite the legacy `endpoint` event. Nothing on the way
 *   decodes bodies, so the upstream's Content-Encoding (if it compresses anyway) is kept.
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
  "forwarded",
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

/** The names a Connection header lists (an array: there are one or two, and a Set per request costs more). */
function connectionTokens(headers: Headers): readonly string[] | undefined {
  const value = headers.get("connection");
  if (value === null) return undefined;
  if (!value.includes(",")) return [value.trim().toLowerCase()];
  return value.split(",").map((token) => token.trim().toLowerCase());
}

/** Headers never forwarded upstream as the client sent them (besides those named in Connection). */
const strippedUpstream: ReadonlySet<string> = new Set([...hopByHop, ...neverUpstream]);

/**
 * The request headers for the upstream, as name/value pairs (lower-case names): one pass
 * over the client's headers, which costs less than copying them and deleting from the copy.
 */
export function upstreamRequestHeaders(req: Request, info: ForwardingInfo, sessionless = false): [string, string][] {
  const source = req.headers;
  const named = connectionTokens(source);
  const trusted = info.trustProxyHeaders;
  const out: [string, string][] = [];
  let host: string | undefined;
  let priorFor: string | undefined;
  let hasProto = false;
  let hasForwardedHost = false;
  source.forEach((value, name) => {
    if (name === "host") host = value;
    if (strippedUpstream.has(name) || named?.includes(name) || (sessionless && name === "mcp-session-id")) return;
    if (forwarded.has(name)) {
      if (!trusted) return;
      if (name === "x-forwarded-for") {
        priorFor = value;
        return;
      }
      if (name === "x-forwarded-proto") hasProto = true;
      else if (name === "x-forwarded-host") hasForwardedHost = true;
    }
    out.push([name, value]);
  });
  const remote = info.remoteAddress;
  if (remote !== "") out.push(["x-forwarded-for", priorFor ? `${priorFor}, ${remote}` : remote]);
  else if (priorFor !== undefined) out.push(["x-forwarded-for", priorFor]);
  if (!hasProto) out.push(["x-forwarded-proto", "http"]);
  if (host !== undefined && !hasForwardedHost) out.push(["x-forwarded-host", host]);
  return out;
}

/** The lengths of the hop-by-hop names: most fields are ruled out without lower-casing their names. */
const hopByHopLengths: ReadonlySet<number> = new Set([...hopByHop].map((name) => name.length));

/**
 * Whether the fields of an answer as mcpmgr's client received them (upstream/responses.ts
 * `receivedFields`) hold one that sanitiseResponseHeaders removes: without Connection, no other
 * field can be named in it, so only the hop-by-hop names count.
 */
export function needsSanitising(fields: readonly (readonly [string, string])[]): boolean {
  for (const [name] of fields) if (hopByHopLengths.has(name.length) && hopByHop.has(name.toLowerCase())) return true;
  return false;
}

/**
 * Field `name` (lower case) among received fields, as `Headers.get` gives it: null when absent,
 * repeated fields joined with ", ".
 */
export function receivedField(fields: readonly (readonly [string, string])[], name: string): string | null {
  let value: string | null = null;
  for (const [field, fieldValue] of fields) {
    if (field.length === name.length && field.toLowerCase() === name)
      value = value === null ? fieldValue : `${value}, ${fieldValue}`;
  }
  return value;
}

/**
 * Cleans the upstream response's headers in place (fetch gives us a mutable copy), so
 * a plain response can be returned as it is instead of being re-wrapped.
 */
export function sanitiseResponseHeaders(headers: Headers): Headers {
  const named = connectionTokens(headers);
  for (const name of hopByHop) headers.delete(name);
  if (named !== undefined) for (const name of named) headers.delete(name);
  // Content-Encoding and Content-Length stay: the body is passed on exactly as the upstream
  // sent it (the forwarder asks fetch not to decompress; mcpmgr's own client never does).
  return headers;
}
