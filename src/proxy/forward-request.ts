/**
 * A client's request as the transparent forwarder sends it upstream (forward.ts): the URL it
 * goes to and its body, read whole when it is small.
 */
import { pathAndQuery } from "./handler.ts";

/**
 * The upstream URL of each request, made once per forwarder: the same path and query at the
 * target's origin, without the public `endpointPrefix`; the MCP endpoint itself also carries the
 * target's query.
 */
export function upstreamUrlFor(target: URL, endpointPrefix: string | undefined): (requestUrl: string) => string {
  const origin = target.origin;
  const targetPath = target.pathname;
  const targetQuery = target.search.slice(1);
  return (requestUrl) => {
    let pq = pathAndQuery(requestUrl);
    if (endpointPrefix !== undefined && pq.startsWith(endpointPrefix)) {
      const next = pq.charAt(endpointPrefix.length);
      if (next === "" || next === "/" || next === "?") pq = pq.slice(endpointPrefix.length) || "/";
    }
    if (targetQuery === "") return origin + pq;
    const q = pq.indexOf("?");
    const path = q === -1 ? pq : pq.slice(0, q);
    if (path !== targetPath) return origin + pq;
    return q === -1 ? `${origin}${path}?${targetQuery}` : `${origin}${path}?${targetQuery}&${pq.slice(q + 1)}`;
  };
}

/**
 * MCP messages are small: a body with a declared length under this size is read whole
 * and sent with a Content-Length, which costs the upstream connection far less than a
 * chunked upload. Anything larger, or of unknown length, streams through.
 */
const bufferBelowBytes = 64 * 1024;

export type UpstreamBody = ArrayBuffer | ReadableStream<Uint8Array> | undefined;

/** Not an async function: the forwarder awaits what it returns, and another async layer would cost a promise more. */
export function requestBody(req: Request, method: string): UpstreamBody | Promise<ArrayBuffer> {
  if (method === "GET" || method === "HEAD") return undefined;
  // The length first: reading `.body` makes a stream, and the whole body is cheaper read without one.
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) <= bufferBelowBytes)
    return Number(declared) === 0 ? undefined : req.arrayBuffer();
  return req.body ?? undefined;
}
