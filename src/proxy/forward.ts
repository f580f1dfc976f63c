/**
 * Transparent forwarding to an HTTP MCP upstream (streamable-http and legacy SSE).
 * Bodies stream in both directions; nothing is parsed on the way through except the
 * first event of a legacy SSE stream and the (small) body of a session error.
 */
import type { UpstreamFetch } from "./authenticated-fetch.ts";
import { pathAndQuery, type Handler } from "./handler.ts";
import { sanitiseResponseHeaders, upstreamRequestHeaders } from "./headers.ts";
import { JsonRpcCode, jsonRpcError } from "./jsonrpc.ts";
import type { LiveStreams } from "./live-streams.ts";
import { publicEndpoint } from "./public-url.ts";
import { endpointEventRewriter } from "./sse-endpoint.ts";
import { relaySse } from "./sse-relay.ts";
import { SessionTracker } from "./session-tracker.ts";
import { defaultUpstreamClient } from "./upstream/client.ts";
import { UpstreamError } from "./upstream/errors.ts";

export interface ForwardOptions {
  readonly target: URL;
  readonly endpointPrefix: string | undefined;
  readonly trustProxyHeaders: boolean;
  readonly live: LiveStreams;
  readonly sessions?: SessionTracker;
  /**
   * The upstream fetch, possibly decorated with mcpmgr's own credentials (authenticated-fetch.ts).
   * Default: mcpmgr's own HTTP/1.1 client (upstream/client.ts), which decorators wrap as well.
   */
  readonly fetch?: UpstreamFetch;
  readonly pingIntervalMs?: number;
  /** How long to wait for the upstream's response headers (not for the body). */
  readonly headersTimeoutMs?: number;
}

const defaultHeadersTimeoutMs = 5 * 60_000;

export function transparentForwarder(options: ForwardOptions): Handler {
  const { target, endpointPrefix, trustProxyHeaders, live } = options;
  const sessions = options.sessions ?? new SessionTracker();
  const doFetch: UpstreamFetch = options.fetch ?? defaultUpstreamClient().fetch;
  const headersTimeoutMs = options.headersTimeoutMs ?? defaultHeadersTimeoutMs;
  const origin = target.origin;
  const targetPath = target.pathname;
  const targetQuery = target.search.slice(1);

  /** The upstream URL: same path and query, except the MCP endpoint itself also carries the target's query. */
  const upstreamUrl = (requestUrl: string): string => {
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

  return async (req, ctx) => {
    const sessionId = req.headers.get("mcp-session-id");
    if (sessionId !== null && sessions.hasEnded(sessionId)) return sessionNotFound();

    const abort = new AbortController();
    const onClientAbort = () => abort.abort(req.signal.reason);
    req.signal.addEventListener("abort", onClientAbort, { once: true });
    const timer = setTimeout(() => abort.abort(new UpstreamTimeout()), headersTimeoutMs);

    const method = req.method;
    let upstream: Response;
    try {
      upstream = await doFetch(upstreamUrl(req.url), {
        method,
        headers: upstreamRequestHeaders(req, { remoteAddress: ctx.remoteAddress, trustProxyHeaders }),
        body: await requestBody(req, method),
        duplex: "half", // required for a streamed request body
        redirect: "manual",
        signal: abort.signal,
        // Bodies pass through as the upstream sent them (and, with fetch, no Accept-Encoding of its own).
        decompress: false,
        // Bun's fetch drops sockets idle for 5 minutes by default: fatal for SSE.
        timeout: false,
        incoming: req,
      });
    } catch (err) {
      req.signal.removeEventListener("abort", onClientAbort);
      return upstreamFailure(err, abort.signal.reason, req.signal.aborted);
    } finally {
      clearTimeout(timer);
    }

    const status = upstream.status;
    if (sessionId !== null) {
      if (method === "DELETE" && status >= 200 && status < 300) sessions.markEnded(sessionId);
      else if (status === 404 || status === 400) {
        const normalised = await normaliseSessionError(upstream);
        if (normalised !== undefined) {
          sessions.markEnded(sessionId);
          return normalised;
        }
        sanitiseResponseHeaders(upstream.headers);
        return upstream;
      }
    }

    const headers = sanitiseResponseHeaders(upstream.headers);
    // Returned as it is: a body that is not looked at stays a plain byte body, the cheapest for
    // Bun.serve to send (reading `.body` would turn it into a stream). A client that leaves
    // while it streams still aborts the upstream through the listener.
    if (!isEventStream(headers)) return upstream;
    const body = upstream.body;
    if (body === null) {
      req.signal.removeEventListener("abort", onClientAbort);
      return upstream;
    }

    ctx.keepOpen();
    // A compressed stream (the upstream ignored our identity-only request) cannot take comments.
    if (headers.has("content-encoding")) return upstream;
    const relayed = relaySse(body, {
      live,
      ...(options.pingIntervalMs === undefined ? {} : { pingIntervalMs: options.pingIntervalMs }),
      ...(method === "GET"
        ? {
            head: endpointEventRewriter((endpoint) =>
              publicEndpoint(endpoint, target, req, { endpointPrefix, trustProxyHeaders }),
            ),
          }
        : {}),
      onCancel: () => abort.abort(),
      announceOpen: true,
    });
    return new Response(relayed, { status, statusText: upstream.statusText, headers });
  };
}

/**
 * MCP messages are small: a body with a declared length under this size is read whole
 * and sent with a Content-Length, which costs the upstream connection far less than a
 * chunked upload. Anything larger, or of unknown length, streams through.
 */
const bufferBelowBytes = 64 * 1024;

async function requestBody(
  req: Request,
  method: string,
): Promise<ArrayBuffer | ReadableStream<Uint8Array> | undefined> {
  if (method === "GET" || method === "HEAD") return undefined;
  // The length first: reading `.body` makes a stream, and the whole body is cheaper read without one.
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) <= bufferBelowBytes)
    return Number(declared) === 0 ? undefined : req.arrayBuffer();
  return req.body ?? undefined;
}

class UpstreamTimeout extends Error {
  constructor() {
    super("the upstream MCP server did not answer in time");
  }
}

function isEventStream(headers: Headers): boolean {
  return headers.get("content-type")?.startsWith("text/event-stream") ?? false;
}

function sessionNotFound(): Response {
  return jsonRpcError(404, JsonRpcCode.sessionNotFound, "Session not found: start a new session with initialize");
}

/**
 * Upstreams disagree on how to say "unknown session" (404 per spec, 400 in some
 * popular servers). Both become 404 + -32001 so clients re-initialise; a 400 about
 * something else passes through untouched.
 */
async function normaliseSessionError(upstream: Response): Promise<Response | undefined> {
  if (upstream.status === 404) {
    await upstream.body?.cancel().catch(() => {});
    return sessionNotFound();
  }
  const length = Number(upstream.headers.get("content-length") ?? "0");
  if (length > 8192) return undefined;
  const text = await upstream
    .clone()
    .text()
    .catch(() => "");
  if (!/session/i.test(text)) return undefined;
  await upstream.body?.cancel().catch(() => {});
  return sessionNotFound();
}

function upstreamFailure(err: unknown, abortReason: unknown, clientGone: boolean): Response {
  if (clientGone) {
    // Nobody is listening; the status is for logs only (nginx's "client closed request").
    return new Response(null, { status: 499 });
  }
  if (abortReason instanceof UpstreamTimeout) {
    return jsonRpcError(504, JsonRpcCode.internalError, abortReason.message);
  }
  if (
    err instanceof UpstreamError &&
    (err.code === "UPSTREAM_BAD_RESPONSE" || err.code === "UPSTREAM_HEAD_TOO_LARGE")
  ) {
    return jsonRpcError(
      502,
      JsonRpcCode.internalError,
      `the upstream MCP server sent an invalid response (${err.message})`,
    );
  }
  const code = (err as { code?: string }).code;
  const detail = code ?? (err instanceof Error ? err.message : "request failed");
  return jsonRpcError(502, JsonRpcCode.internalError, `upstream MCP server unreachable (${detail})`);
}
