/**
 * The proxy is a chain of web-standard handlers (ARCHITECTURE.md §3): every piece takes a
 * Request and returns a Response, so tests drive it with `new Request(...)` and
 * only serve.ts knows about sockets.
 */

export interface RequestContext {
  /** Address of the connected peer, "" when unknown (unit tests). */
  readonly remoteAddress: string;
  /** Exempt this request from the server's idle timeout (long-lived SSE streams). */
  keepOpen(): void;
}

export type Handler = (req: Request, ctx: RequestContext) => Response | Promise<Response>;
export type Middleware = (next: Handler) => Handler;

/** compose(h, a, b) handles a request as a(b(h)): the first middleware sees it first. */
export function compose(handler: Handler, ...middleware: readonly Middleware[]): Handler {
  let composed = handler;
  for (let i = middleware.length - 1; i >= 0; i--) composed = (middleware[i] as Middleware)(composed);
  return composed;
}

/** A context for calling handlers outside a server (tests, in-process use). */
export function detachedContext(remoteAddress = ""): RequestContext {
  return { remoteAddress, keepOpen() {} };
}

/** Path and query of an absolute request URL, without allocating a URL object. */
export function pathAndQuery(url: string): string {
  const slash = url.indexOf("/", url.indexOf("//") + 2);
  return slash === -1 ? "/" : url.slice(slash);
}

export function pathOf(url: string): string {
  const full = pathAndQuery(url);
  const query = full.indexOf("?");
  return query === -1 ? full : full.slice(0, query);
}
