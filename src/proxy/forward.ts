/**
 * Transparent forwarding to an HTTP MCP upstream (streamable-http and legacy SSE).
 * Bodies stream in both directions; nothing is parsed on the way through except the
 * first event of a legacy SSE stream and the (small) body of a session error.
 * Sessions belong to the caller that opened them (session-tracker.ts, legacy-sessions.ts):
 * another caller's request for one is answered 404 here and never reaches the upstream.
 */
import { Buffer } from "node:buffer";
import { defaultMaxMessageBytes } from "./answer-limit.ts";
import type { UpstreamFetch } from "./authenticated-fetch.ts";
import { pathAndQuery, type Handler } from "./handler.ts";
import { sanitiseResponseHeaders, upstreamRequestHeaders } from "./headers.ts";
import { JsonRpcCode, jsonRpcError, sessionLimitReached } from "./jsonrpc.ts";
import { LegacySessions } from "./legacy-sessions.ts";
import { namesPerRequestRevision } from "./mcp-message.ts";
import type { LiveStreams } from "./live-streams.ts";
import { publicEndpoint } from "./public-url.ts";
import { PendingAnswers, requestIdsOf } from "./sse-answers.ts";
import { endpointEventRewriter } from "./sse-endpoint.ts";
import { relaySse } from "./sse-relay.ts";
import { SessionTracker } from "./session-tracker.ts";
import { defaultUpstreamClient } from "./upstream/client.ts";
import { UpstreamError } from "./upstream/errors.ts";
import { isWholeResponse } from "./upstream/responses.ts";

export interface ForwardOptions {
  readonly target: URL;
  readonly endpointPrefix: string | undefined;
  readonly trustProxyHeaders: boolean;
  readonly live: LiveStreams;
  /** Default: one with MCPMGR_MAX_SESSIONS and the idle time given here. */
  readonly sessions?: SessionTracker;
  /** Sessions bound at once (MCPMGR_MAX_SESSIONS; default 1,000). */
  readonly maxSessions?: number;
  /** A session without requests for this long is forgotten (MCPMGR_SESSION_IDLE_TIMEOUT). */
  readonly sessionIdleMs?: number;
  /**
   * Who a request acts as (middleware/caller.ts `callerOf`); undefined without authentication.
   * With authentication, a session is served only to the caller that opened it, and a session
   * this proxy did not see opened is not served at all.
   */
  readonly callerOf?: (req: Request) => string | undefined;
  /**
   * The upstream fetch, possibly decorated with mcpmgr's own credentials (authenticated-fetch.ts).
   * Default: mcpmgr's own HTTP/1.1 client (upstream/client.ts), which decorators wrap as well.
   */
  readonly fetch?: UpstreamFetch;
  readonly pingIntervalMs?: number;
  /** How long to wait for the upstream's response headers (not for the body). */
  readonly headersTimeoutMs?: number;
  /**
   * The largest SSE event of a POST's stream watched for its answers (MCPMGR_MAX_MESSAGE_BYTES):
   * a larger one is still relayed, only no longer watched (sse-answers.ts).
   */
  readonly maxMessageBytes?: number;
  /** Where a warning goes (an event over that size). */
  readonly onWarning?: (text: string) => void;
}

const defaultHeadersTimeoutMs = 5 * 60_000;

export function transparentForwarder(options: ForwardOptions): Handler {
  const { target, endpointPrefix, trustProxyHeaders, live } = options;
  const sessions =
    options.sessions ??
    new SessionTracker({
      ...(options.maxSessions !== undefined ? { maxSessions: options.maxSessions } : {}),
      ...(options.sessionIdleMs !== undefined ? { idleMs: options.sessionIdleMs } : {}),
      // A session that gave way to a new one is ended upstream too (its client gets 404 here).
      onEvicted: (sessionId) => closeUpstreamSession(target.href, sessionId),
    });
  const legacy = new LegacySessions(sessions);
  const callerOf = options.callerOf ?? (() => undefined);
  /** Requests waiting for the upstream's response head: a graceful stop answers them. */
  const waiting = new Set<AbortController>();
  live.beforeClose((reason) => {
    for (const controller of waiting) controller.abort(new ShuttingDown(reason));
  });
  const doFetch: UpstreamFetch = options.fetch ?? defaultUpstreamClient().fetch;
  const headersTimeoutMs = options.headersTimeoutMs ?? defaultHeadersTimeoutMs;
  const origin = target.origin;
  const targetPath = target.pathname;
  const targetQuery = target.search.slice(1);
  const oversizedEvent = (max: number) =>
    options.onWarning?.(
      `the MCP server sent an event larger than ${max} bytes (MCPMGR_MAX_MESSAGE_BYTES); relayed without watching it for answers`,
    );

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

  /**
   * Whether `req` may use the session it names: its owner's requests only. Undefined when it
   * may; else the refusal (404, as for a session that does not exist).
   */
  const refuseSession = (req: Request, sessionId: string | null, url: string, caller: string | undefined) => {
    if (sessionId !== null) {
      if (sessions.hasEnded(sessionId)) return sessionNotFound();
      const owner = sessions.ownerOf(sessionId);
      // Without authentication there is no one to tell apart; a session opened before this
      // proxy started (or forgotten when idle) is left to the upstream.
      if (caller === undefined ? owner !== undefined && owner !== "" : owner !== caller) return sessionNotFound();
      return undefined;
    }
    if (!legacy.active || req.method === "GET" || req.method === "HEAD" || req.method === "OPTIONS") return undefined;
    const target = new URL(url);
    const owner = legacy.ownerOf(target);
    if (owner === undefined) {
      // With authentication, a message to a variant of an announced path (/messages/, //messages)
      // could still reach a session at the upstream: only the MCP endpoint and announced paths pass.
      return caller !== undefined && target.pathname !== targetPath ? sessionNotFound() : undefined;
    }
    if (owner === null) return caller === undefined ? undefined : sessionNotFound();
    return owner === (caller ?? "") ? undefined : sessionNotFound();
  };

  return async (req, ctx) => {
    // A request naming 2026-07-28 or later belongs to no session, whatever Mcp-Session-Id it carries (that
    // revision: ignore it): the header is neither checked here nor sent on, so the upstream answers it as one.
    const perRequest = namesPerRequestRevision(req.headers.get("mcp-protocol-version"));
    const sessionId = perRequest ? null : req.headers.get("mcp-session-id");
    const url = upstreamUrl(req.url);
    const caller = callerOf(req);
    const refused = refuseSession(req, sessionId, url, caller);
    if (refused !== undefined) return refused;
    const method = req.method;
    // A legacy SSE stream is a session too; refused up front, before its head goes out.
    if (method === "GET" && sessionId === null && sessions.full) return sessionLimitReached();

    if (sessionId === null) return forwardRequest(req, ctx, { sessionId, url, caller, perRequest, takeHold: noHold });
    // The session is in use until the answer has ended (a long tool call, a GET stream): the tracker's
    // eviction and expiry spare it. A streamed answer ends the hold itself when it ends.
    const hold = sessions.hold(sessionId);
    let streamed = false;
    const takeHold = () => {
      streamed = true;
      return hold;
    };
    try {
      return await forwardRequest(req, ctx, { sessionId, url, caller, perRequest, takeHold });
    } finally {
      if (!streamed) hold();
    }
  };

  /** `req` sent upstream and its answer relayed; a relayed stream takes the session's hold (`takeHold`). */
  async function forwardRequest(
    req: Request,
    ctx: Parameters<Handler>[1],
    route: {
      sessionId: string | null;
      url: string;
      caller: string | undefined;
      perRequest: boolean;
      takeHold: () => (() => void) | undefined;
    },
  ): Promise<Response> {
    const { sessionId, url, caller, perRequest } = route;
    const method = req.method;
    const abort = new AbortController();
    const onClientAbort = () => abort.abort(req.signal.reason);
    req.signal.addEventListener("abort", onClientAbort, { once: true });
    const timer = setTimeout(() => abort.abort(new UpstreamTimeout()), headersTimeoutMs);
    waiting.add(abort);

    let body: Awaited<ReturnType<typeof requestBody>>;
    let upstream: Response;
    try {
      body = await requestBody(req, method);
      upstream = await doFetch(url, {
        method,
        headers: upstreamRequestHeaders(req, { remoteAddress: ctx.remoteAddress, trustProxyHeaders }, perRequest),
        body,
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
      return upstreamFailure(err, abort.signal.reason, req.signal.aborted, method);
    } finally {
      clearTimeout(timer);
      waiting.delete(abort);
    }

    const status = upstream.status;
    if (sessionId !== null) {
      if (method === "DELETE" && status >= 200 && status < 300) sessions.markEnded(sessionId);
      else if (status === 404 || status === 400) {
        const normalised = await normaliseSessionError(upstream);
        if (normalised === "broken") return brokenBody();
        if (normalised !== undefined) {
          sessions.markEnded(sessionId);
          return normalised;
        }
        sanitiseResponseHeaders(upstream.headers);
        return readAhead(upstream);
      }
    }
    const opened = upstream.headers.get("mcp-session-id");
    // A new session (an initialize's answer; some clients still send their old id with it) is
    // bound to the caller that opened it; past the limit it is closed again.
    if (opened !== null && opened !== sessionId && !sessions.bind(opened, caller ?? "")) {
      await upstream.body?.cancel().catch(() => {});
      closeUpstreamSession(url, opened, req);
      return sessionLimitReached();
    }

    const headers = sanitiseResponseHeaders(upstream.headers);
    // A whole body is returned as it is: a body that is not looked at stays a plain byte body,
    // the cheapest for Bun.serve to send (reading `.body` would turn it into a stream). Others
    // are read ahead, so one that breaks early is a 502, not a reset. A client that leaves
    // while it streams still aborts the upstream through the listener.
    if (!isEventStream(headers)) {
      // A whole body returns as it is, without the promise (and the microtask hops) of readAhead.
      return upstream.body === null || isWholeResponse(upstream) ? upstream : readAhead(upstream);
    }
    const stream = upstream.body;
    if (stream === null) {
      req.signal.removeEventListener("abort", onClientAbort);
      return upstream;
    }

    ctx.keepOpen();
    // A compressed stream (the upstream ignored our identity-only request) cannot take comments.
    if (headers.has("content-encoding")) return upstream;
    let release: (() => void) | undefined;
    const endHold = route.takeHold();
    const relayed = relaySse(stream, {
      live,
      ...(options.pingIntervalMs === undefined ? {} : { pingIntervalMs: options.pingIntervalMs }),
      ...(method === "GET"
        ? {
            head: endpointEventRewriter((endpoint) => {
              // The legacy session's message URL, bound to the caller that opened the stream.
              const announced = parseUrl(endpoint, url);
              if (announced !== undefined && sessionId === null) release = legacy.announce(announced, caller ?? "");
              return publicEndpoint(endpoint, target, req, { endpointPrefix, trustProxyHeaders });
            }),
          }
        : {}),
      onEnd: () => {
        release?.();
        endHold?.();
      },
      // A POST's stream owes an answer to each of its requests (their ids are read only if it ends early).
      ...(method === "POST"
        ? {
            answers: new PendingAnswers(() => requestIdsOf(body instanceof ReadableStream ? undefined : body), {
              maxEventBytes: options.maxMessageBytes ?? defaultMaxMessageBytes,
              onOversized: oversizedEvent,
            }),
          }
        : {}),
      onCancel: () => abort.abort(),
      announceOpen: true,
    });
    return new Response(relayed, { status, statusText: upstream.statusText, headers });
  }

  /** Ends an upstream session this proxy refused to hand out (fire and forget). */
  function closeUpstreamSession(url: string, sessionId: string, req?: Request): void {
    const headers: [string, string][] = [["mcp-session-id", sessionId]];
    const version = req?.headers.get("mcp-protocol-version") ?? null;
    if (version !== null) headers.push(["mcp-protocol-version", version]);
    void doFetch(url, { method: "DELETE", headers, redirect: "manual", signal: AbortSignal.timeout(10_000) })
      .then((response) => response.body?.cancel())
      .catch(() => {});
  }
}

const noHold = () => undefined;

function parseUrl(text: string, base: string): URL | undefined {
  try {
    return new URL(text, base);
  } catch {
    return undefined;
  }
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

/** A graceful stop (or a restart) ended the wait; the reason is LiveStreams.closeAll's. */
class ShuttingDown extends Error {}

function isEventStream(headers: Headers): boolean {
  return headers.get("content-type")?.startsWith("text/event-stream") ?? false;
}

function sessionNotFound(): Response {
  return jsonRpcError(404, JsonRpcCode.sessionNotFound, "Session not found: start a new session with initialize");
}

/**
 * Upstreams disagree on how to say "unknown session" (404 per spec, 400 in some
 * popular servers). Both become 404 + -32001 so clients re-initialise; a 400 about
 * something else passes through untouched, and one whose body breaks is "broken".
 */
async function normaliseSessionError(upstream: Response): Promise<Response | "broken" | undefined> {
  if (upstream.status === 404) {
    await upstream.body?.cancel().catch(() => {});
    return sessionNotFound();
  }
  const length = Number(upstream.headers.get("content-length") ?? "0");
  if (length > 8192) return undefined;
  const text = await upstream
    .clone()
    .text()
    .catch(() => undefined);
  if (text === undefined) {
    await upstream.body?.cancel().catch(() => {});
    return "broken";
  }
  if (!/session/i.test(text)) return undefined;
  await upstream.body?.cancel().catch(() => {});
  return sessionNotFound();
}

/**
 * Bytes of a streamed (non-SSE) answer read before the answer starts: a JSON answer is no use
 * to the client until it is whole anyway, and one the upstream breaks within this much becomes
 * a 502 with a JSON-RPC error instead of a reset connection. Longer answers stream on from
 * there (a break later can only cut them).
 */
const readAheadBytes = 1024 * 1024;

async function readAhead(upstream: Response): Promise<Response> {
  if (upstream.body === null || isWholeResponse(upstream)) return upstream;
  const reader = upstream.body.getReader();
  const held: Uint8Array[] = [];
  let size = 0;
  const answer = (body: Uint8Array | ReadableStream<Uint8Array>) =>
    new Response(body, { status: upstream.status, statusText: upstream.statusText, headers: upstream.headers });
  for (;;) {
    let chunk: Awaited<ReturnType<typeof reader.read>>;
    try {
      chunk = await reader.read();
    } catch {
      return brokenBody();
    }
    if (chunk.done) return answer(held.length === 1 ? (held[0] as Uint8Array) : Buffer.concat(held, size));
    held.push(chunk.value);
    size += chunk.value.byteLength;
    if (size >= readAheadBytes) break;
  }
  return answer(
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of held.splice(0)) controller.enqueue(chunk);
      },
      async pull(controller) {
        const next = await reader.read();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
      cancel: (reason) => reader.cancel(reason),
    }),
  );
}

function brokenBody(): Response {
  return jsonRpcError(
    502,
    JsonRpcCode.internalError,
    "the upstream MCP server's answer broke off before it was complete",
  );
}

/** Methods no HTTP client may send (the fetch standard's forbidden methods): never forwarded. */
const unforwardable = new Set(["CONNECT", "TRACE", "TRACK"]);

function upstreamFailure(err: unknown, abortReason: unknown, clientGone: boolean, method: string): Response {
  if (clientGone) {
    // Nobody is listening; the status is for logs only (nginx's "client closed request").
    return new Response(null, { status: 499 });
  }
  // Refused by the upstream client before anything was sent: the client's request, not the upstream, is at fault.
  if (unforwardable.has(method.toUpperCase()))
    return jsonRpcError(405, JsonRpcCode.serverError, `Method Not Allowed: ${method} is not forwarded`, {
      headers: { allow: "GET, POST, DELETE" },
    });
  if (abortReason instanceof UpstreamTimeout) {
    return jsonRpcError(504, JsonRpcCode.internalError, abortReason.message);
  }
  if (abortReason instanceof ShuttingDown) {
    return jsonRpcError(503, JsonRpcCode.internalError, abortReason.message, { headers: { "retry-after": "1" } });
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
  if (err instanceof UpstreamError && err.code === "UPSTREAM_BODY_INCOMPLETE") return brokenBody();
  const code = (err as { code?: string }).code;
  const detail = code ?? (err instanceof Error ? err.message : "request failed");
  return jsonRpcError(502, JsonRpcCode.internalError, `upstream MCP server unreachable (${detail})`);
}
