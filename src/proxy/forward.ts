/**
 * Transparent forwarding to an HTTP MCP upstream (streamable-http and legacy SSE).
 * Bodies stream in both directions; nothing is parsed on the way through except the
 * first event of a legacy SSE stream and the (small) body of a session error.
 * Sessions belong to the caller that opened them (forward-sessions.ts): another caller's
 * request for one is answered 404 here and never reaches the upstream. The request as sent
 * upstream: forward-request.ts; an event stream relayed: forward-stream.ts; the answers when
 * the upstream fails: forward-failures.ts.
 */
import type { UpstreamFetch } from "./authenticated-fetch.ts";
import { ShuttingDown, UpstreamTimeout, upstreamFailure } from "./forward-failures.ts";
import { requestBody, type UpstreamBody, upstreamUrlFor } from "./forward-request.ts";
import { ForwardedSessions, type ForwardRoute } from "./forward-sessions.ts";
import { eventStreamRelay } from "./forward-stream.ts";
import type { Handler } from "./handler.ts";
import { sanitiseResponseHeaders, upstreamRequestHeaders } from "./headers.ts";
import type { LiveStreams } from "./live-streams.ts";
import { namesPerRequestRevision } from "./mcp-message.ts";
import { readAhead } from "./read-ahead.ts";
import type { SessionTracker } from "./session-tracker.ts";
import { defaultUpstreamClient } from "./upstream/client.ts";
import { isWholeResponse } from "./upstream/responses.ts";

export interface ForwardOptions {
  readonly target: URL;
  readonly endpointPrefix: string | undefined;
  readonly trustProxyHeaders: boolean;
  /**
   * With trustProxyHeaders, the names the listener answers to (middleware/host-names.ts): the only
   * forwarded hosts the legacy SSE `endpoint` event may name; any other leaves it relative.
   */
  readonly answersTo?: ((host: string) => boolean) | undefined;
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
  const doFetch: UpstreamFetch = options.fetch ?? defaultUpstreamClient().fetch;
  const sessions = new ForwardedSessions({
    target,
    sessions: options.sessions,
    maxSessions: options.maxSessions,
    sessionIdleMs: options.sessionIdleMs,
    fetch: doFetch,
  });
  const relayEventStream = eventStreamRelay({
    target,
    endpointPrefix,
    trustProxyHeaders,
    answersTo: options.answersTo,
    live,
    sessions,
    pingIntervalMs: options.pingIntervalMs,
    maxMessageBytes: options.maxMessageBytes,
    onWarning: options.onWarning,
  });
  const tracker = sessions.tracker;
  const callerOf = options.callerOf ?? (() => undefined);
  /** Requests waiting for the upstream's response head: a graceful stop answers them. */
  const waiting = new Set<AbortController>();
  live.beforeClose((reason) => {
    for (const controller of waiting) controller.abort(new ShuttingDown(reason));
  });
  const headersTimeoutMs = options.headersTimeoutMs ?? defaultHeadersTimeoutMs;
  const upstreamUrl = upstreamUrlFor(target, endpointPrefix);

  return async (req, ctx) => {
    // A request naming 2026-07-28 or later belongs to no session, whatever Mcp-Session-Id it carries (that
    // revision: ignore it): the header is neither checked here nor sent on, so the upstream answers it as one.
    const perRequest = namesPerRequestRevision(req.headers.get("mcp-protocol-version"));
    const sessionId = perRequest ? null : req.headers.get("mcp-session-id");
    const url = upstreamUrl(req.url);
    const caller = callerOf(req);
    const refused = sessions.refuse(req, ctx, sessionId, url, caller);
    if (refused !== undefined) return refused;

    if (sessionId === null) return forwardRequest(req, ctx, { sessionId, url, caller, perRequest, takeHold: noHold });
    // The session is in use until the answer has ended (a long tool call, a GET stream): the tracker's
    // eviction and expiry spare it. A streamed answer ends the hold itself when it ends.
    const hold = tracker.hold(sessionId);
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
  async function forwardRequest(req: Request, ctx: Parameters<Handler>[1], route: ForwardRoute): Promise<Response> {
    const method = req.method;
    const abort = new AbortController();
    const onClientAbort = () => abort.abort(req.signal.reason);
    req.signal.addEventListener("abort", onClientAbort, { once: true });
    const timer = setTimeout(() => abort.abort(new UpstreamTimeout()), headersTimeoutMs);
    waiting.add(abort);

    let body: UpstreamBody;
    let upstream: Response;
    try {
      body = await requestBody(req, method);
      upstream = await doFetch(route.url, {
        method,
        headers: upstreamRequestHeaders(req, { remoteAddress: ctx.remoteAddress, trustProxyHeaders }, route.perRequest),
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

    // A session ended or opened by this answer, or an "unknown session" error: the sessions' business.
    const instead = sessions.answered(upstream, req, method, route);
    if (instead !== undefined) return instead;

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
    return relayEventStream(upstream, stream, req, route, body, abort);
  }
}

const noHold = () => undefined;

function isEventStream(headers: Headers): boolean {
  return headers.get("content-type")?.startsWith("text/event-stream") ?? false;
}
