/**
 * Transparent forwarding to an HTTP MCP upstream (streamable-http and legacy SSE).
 * Bodies stream in both directions; nothing is parsed on the way through except the
 * first event of a legacy SSE stream and the (small) body of a session error.
 * Sessions belong to the caller that opened them (forward-sessions.ts): another caller's
 * request for one is answered 404 here and never reaches the upstream. The request as sent
 * upstream: forward-request.ts; an event stream relayed: forward-stream.ts; the answers when
 * the upstream fails: forward-failures.ts; a redirect kept on the proxy: forward-redirect.ts.
 */
import type { UpstreamFetch } from "./authenticated-fetch.ts";
import { ShuttingDown, UpstreamTimeout, upstreamFailure } from "./forward-failures.ts";
import { isRedirect, redirectRewriter } from "./forward-redirect.ts";
import { requestBody, type UpstreamBody, upstreamUrlFor } from "./forward-request.ts";
import { ForwardedSessions, type ForwardRoute } from "./forward-sessions.ts";
import { eventStreamRelay } from "./forward-stream.ts";
import type { Handler } from "./handler.ts";
import { needsSanitising, receivedField, sanitiseResponseHeaders, upstreamRequestHeaders } from "./headers.ts";
import type { LiveStreams } from "./live-streams.ts";
import { namesPerRequestRevision } from "./mcp-message.ts";
import { readAhead } from "./read-ahead.ts";
import type { SessionTracker } from "./session-tracker.ts";
import { WaitingRequests } from "./waiting-requests.ts";
import { Cancellation } from "./upstream/cancellation.ts";
import { defaultUpstreamClient } from "./upstream/client.ts";
import { isWholeResponse, receivedFields } from "./upstream/responses.ts";

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
  /** Requests waiting for the upstream's response head: cancelled after the headers timeout; a graceful stop answers them. */
  const waiting = new WaitingRequests(options.headersTimeoutMs ?? defaultHeadersTimeoutMs, (cancel) =>
    cancel.abort(new UpstreamTimeout()),
  );
  live.beforeClose((reason) => {
    for (const cancel of waiting.cancellations()) cancel.abort(new ShuttingDown(reason));
  });
  const upstreamUrl = upstreamUrlFor(target, endpointPrefix);
  const redirected = redirectRewriter({
    endpointPrefix,
    trustProxyHeaders,
    answersTo: options.answersTo,
    onWarning: options.onWarning,
  });

  // Not an async function: the one async layer of a forwarded request is forwardRequest's.
  return (req, ctx) => {
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
    return forwardRequest(req, ctx, new HeldRoute(sessionId, url, caller, perRequest, tracker.hold(sessionId)));
  };

  /**
   * `req` sent upstream and its answer relayed. A relayed stream takes the session's hold
   * (`takeHold`); else the hold ends once the answer is ready, or the request failed (hence
   * `return await`: a promise returned from the `try` would end it before the answer was ready).
   */
  async function forwardRequest(req: Request, ctx: Parameters<Handler>[1], route: ForwardRoute): Promise<Response> {
    const method = req.method;
    // The upstream request's cancellation (not an AbortController: upstream/cancellation.ts); a
    // client that leaves cancels it, so does the headers timeout or a graceful stop (`waiting`).
    const cancel = new Cancellation();
    const signal = req.signal;
    const onClientAbort = () => cancel.abort(signal.reason);
    // A client gone before this point is not looked for (a listener added then is never called).
    const goneBefore = signal.aborted;
    const waits = waiting.add(cancel);

    try {
      let body: UpstreamBody;
      let upstream: Response;
      try {
        body = await requestBody(req, method);
        // The client's abort listener is added once the request is on its way (below), not on the
        // path from the client's request to the upstream's: a client that left while its body was
        // read is found here instead, and nothing is sent, as that listener would have had it.
        if (!goneBefore && signal.aborted) cancel.abort(signal.reason);
        const answer = doFetch(route.url, {
          method,
          headers: upstreamRequestHeaders(
            req,
            { remoteAddress: ctx.remoteAddress, trustProxyHeaders },
            route.perRequest,
          ),
          body,
          duplex: "half", // required for a streamed request body
          redirect: "manual",
          cancel,
          // fetch, where mcpmgr's client leaves a request to it (or a fetch given instead), reads this.
          get signal() {
            return cancel.signal;
          },
          // Bodies pass through as the upstream sent them (and, with fetch, no Accept-Encoding of its own).
          decompress: false,
          // Bun's fetch drops sockets idle for 5 minutes by default: fatal for SSE.
          timeout: false,
          incoming: req,
        });
        // No abort event can come between the check above and this: JavaScript runs to completion.
        // No `{ once: true }`: an AbortSignal fires `abort` once anyway, and the options object costs
        // its conversion (and native allocations) on every forwarded request.
        signal.addEventListener("abort", onClientAbort);
        upstream = await answer;
      } catch (err) {
        signal.removeEventListener("abort", onClientAbort);
        return upstreamFailure(err, cancel.reason, signal.aborted, method);
      } finally {
        waiting.remove(waits);
      }

      // The answer's fields as mcpmgr's client received them, when it did: read there, the answer's
      // `headers` (a Headers object made on first use) are never made for a clean answer.
      const fields = receivedFields(upstream);
      const opened =
        fields === undefined ? upstream.headers.get("mcp-session-id") : receivedField(fields, "mcp-session-id");
      // A session ended or opened by this answer, or an "unknown session" error: the sessions' business.
      const instead = sessions.answered(upstream, req, method, route, opened);
      if (instead !== undefined) return await instead;

      // Read after the hygiene, as it may remove a field that Connection names.
      let contentType: string | null;
      if (fields === undefined || needsSanitising(fields)) {
        contentType = sanitiseResponseHeaders(upstream.headers).get("content-type");
      } else {
        contentType = receivedField(fields, "content-type");
      }
      // A Location the client would follow past the proxy: kept on the proxy, or refused.
      if (isRedirect(upstream.status)) return redirected(upstream, route.url, req);
      // A whole body is returned as it is: a body that is not looked at stays a plain byte body,
      // the cheapest for Bun.serve to send (reading `.body` would turn it into a stream, hence the
      // order of the checks). Others are read ahead, so one that breaks early is a 502, not a reset.
      // A client that leaves while it streams still aborts the upstream through the listener.
      if (!contentType?.startsWith("text/event-stream")) {
        // A whole body returns as it is, without the promise (and the microtask hops) of readAhead.
        return isWholeResponse(upstream) || upstream.body === null ? upstream : await readAhead(upstream);
      }
      const stream = upstream.body;
      if (stream === null) {
        signal.removeEventListener("abort", onClientAbort);
        return upstream;
      }

      ctx.keepOpen();
      // A compressed stream (the upstream ignored our identity-only request) cannot take comments.
      if (upstream.headers.has("content-encoding")) return upstream;
      return relayEventStream(upstream, stream, req, route, body, cancel);
    } finally {
      if (route instanceof HeldRoute) route.endUnlessTaken();
    }
  }
}

/** The route of a request on a session: the session is held until its answer is ready, or by the stream relaying it. */
class HeldRoute implements ForwardRoute {
  readonly sessionId: string;
  readonly url: string;
  readonly caller: string | undefined;
  readonly perRequest: boolean;
  readonly #release: () => void;
  #taken = false;

  constructor(sessionId: string, url: string, caller: string | undefined, perRequest: boolean, release: () => void) {
    this.sessionId = sessionId;
    this.url = url;
    this.caller = caller;
    this.perRequest = perRequest;
    this.#release = release;
  }

  takeHold(): () => void {
    this.#taken = true;
    return this.#release;
  }

  endUnlessTaken(): void {
    if (!this.#taken) this.#release();
  }
}

const noHold = () => undefined;
