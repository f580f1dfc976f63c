/**
 * A proxy request's head parsed: the destination of a CONNECT, or of a plain-HTTP absolute-URI
 * request with its head rewritten for the destination (hop-by-hop headers and the proxy's
 * credentials dropped, Host rebuilt). A string is why the request is malformed (answered 400).
 */

export interface Target {
  method: string;
  host: string;
  port: number;
  /** The rewritten request head for plain HTTP; absent for CONNECT. */
  forwardHead?: string;
}

/** The longest request or response head read before giving up on it. */
export const MAX_HEAD_BYTES = 32 * 1024;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Hop-by-hop headers (RFC 9110 §7.6.1) plus the proxy's own credentials, which must never reach
// the destination. Transfer-Encoding stays: the body is relayed verbatim, so its framing must too.
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "upgrade",
]);

export function parseHead(head: string): Target | string {
  const lines = head.split("\r\n");
  const m = /^(\S+) (\S+) (HTTP\/1\.[01])$/.exec(lines[0] ?? "");
  if (!m || !TOKEN.test(m[1] as string)) return "malformed request line";
  const [method, target, version] = [m[1] as string, m[2] as string, m[3] as string];
  const headers: [string, string][] = [];
  for (const line of lines.slice(1)) {
    // `.` stops at bare CR/LF, so header injection and obsolete line folding end up here as 400.
    const h = /^([^:]+):[ \t]*(.*?)[ \t]*$/.exec(line);
    if (!h || !TOKEN.test(h[1] as string)) return "malformed header";
    headers.push([h[1] as string, h[2] as string]);
  }
  if (method === "CONNECT") {
    const a = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(target);
    if (!a) return "malformed CONNECT authority";
    return { method, host: (a[1] ?? a[2]) as string, port: Number(a[3]) };
  }
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return "request target is not an absolute URL";
  }
  if (url.protocol !== "http:") return "only http:// URLs are forwarded (use CONNECT for https)";
  const lower = headers.map(([n]) => n.toLowerCase());
  if (lower.includes("content-length") && lower.includes("transfer-encoding"))
    return "both Content-Length and Transfer-Encoding";
  const dropped = new Set([...HOP_BY_HOP, "host"]); // Host is rebuilt from the URL (RFC 9112 §3.2.2)
  for (const [n, v] of headers) {
    if (n.toLowerCase() === "connection") for (const token of v.split(",")) dropped.add(token.trim().toLowerCase());
  }
  const kept = headers.filter(([n]) => !dropped.has(n.toLowerCase())).map(([n, v]) => `${n}: ${v}`);
  // One request per upstream connection: the client's later bytes go to the same checked
  // destination, and `Connection: close` makes the upstream end the exchange for us.
  const forwardHead = [
    `${method} ${url.pathname}${url.search} ${version}`,
    `Host: ${url.host}`,
    ...kept,
    "Connection: close",
    "",
    "",
  ].join("\r\n");
  return { method, host: url.hostname, port: url.port === "" ? 80 : Number(url.port), forwardHead };
}
