/**
 * Transparent forwarding to an HTTP MCP upstream (streamable-http and legacy SSE).
 * Bodies stream in both directions; nothing is parsed on the way through except the
 * first event of a legacy SSE stream and the (small) body of a session error.
 * Sessions belong to the caller that opened them (session-tracker.ts, legacy-sessions.ts):
 * another caller's request for one is answered 404 here and never reaches the upstream.
 */
import { Buffer } from "node:buffer";
import type { UpstreamFetch } from "./authenticated-fetch.ts";
import { type AbortLike, Cancellation } from "./cancellation.ts";
import { pathAndQuery, type Handler } from "./handler.ts";
import { hasHopByHopField, headerPairs, sanitiseResponseHeaders, upstreamRequestHeaders } from "./headers.ts";
import { JsonRpcCode, jsonRpcError, sessionLimitReached } from "./jsonrpc.ts";
import { LegacySessions } from "./legacy-sessions.ts";
import type { LiveStreams } from "./live-streams.ts";
import { publicEndpoint } from "./public-url.ts";
import { PendingAnswers, requestIdsOf } from "./sse-answers.ts";
import { endpointEventRewriter } from "./sse-endpoint.ts";
import { relaySse } from "./sse-relay.ts";
import { SessionTracker } from "./session-tracker.ts";
import { defaultUpstreamClient, type UpstreamClient } from "./upstream/client.ts";
import { UpstreamError } from "./upstream/errors.ts";
import type { ResponseHead } from "./upstream/response-head.ts";
import { isWholeResponse, WholeAnswer } from "./upstream/responses.ts";
import type { RequestHead } from "./http1/request-head.ts";

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
}

const defaultHeadersTimeoutMs = 5 * 60_000;

/** A request on mcpmgr's own HTTP/1.1 front, as the byte lane sees it (http1/connection.ts). */
export interface LaneClient {
  readonly remoteAddress: string;
  /** Aborted when the client disconnects. */
  readonly signal: AbortLike;
  /** Exempt this request from the connection's idle timeout (a streamed answer). */
  keepOpen(): void;
}

/**
 * The byte lane: a request the front parsed, with its whole body, answered without a web
 * Request or Response when nothing needs one. Undefined: not for the lane (the front makes a
 * Request and runs the handler chain, which answers it, refusals included).
 */
export type ForwardLane = (
  head: RequestHead,
  body: Uint8Array | null,
  client: LaneClient,
) => Promise<Response | WholeAnswer> | undefined;

export interface Forwarder {
  readonly handler: Handler;
  /** The byte lane, for the listener (serve.ts); undefined when the upstream fetch is decorated (credentials). */
  readonly lane: ForwardLane | undefined;
}

/** One forwarded request, however it arrived: a web Request, or a head the byte lane parsed. */
interface ForwardCall {
  readonly method: string;
  readonly url: string;
  readonly sessionId: string | null;
  readonly caller: string | undefined;
  readonly headers: [string, string][];
  readonly body: RequestBody | Promise<RequestBody>;
  readonly clientSignal: AbortLike;
  keepOpen(): void;
  /** The client's Request, for what needs one (legacy endpoint rewriting, token exchange); undefined in the lane. */
  readonly incoming: Request | undefined;
  readonly protocolVersion: string | null;
  /** A small whole answer may come back as a WholeAnswer, to be written as bytes. */
  readonly raw: boolean;
}

type RequestBody = ArrayBuffer | Uint8Array | ReadableStream<Uint8Array> | undefined;

export function transparentForwarder(options: ForwardOptions): Handler {
  return createForwarder(options).handler;
}

export function createForwarder(options: ForwardOptions): Forwarder {
  const { target, endpointPrefix, trustProxyHeaders, live } = options;
  const sessions =
    options.sessions ??
    new SessionTracker({
      ...(options.maxSessions !== undefined ? { maxSessions: options.maxSessions } : {}),
      ...(options.sessionIdleMs !== undefined ? { idleMs: options.sessionIdleMs } : {}),
    });
  const legacy = new LegacySessions(sessions);
  const callerOf = options.callerOf ?? (() => undefined);
  /** Requests waiting for the upstream's response head: a graceful stop answers them. */
  const waiting = new Set<AbortController | Cancellation>();
  live.beforeClose((reason) => {
    for (const controller of waiting) controller.abort(new ShuttingDown(reason));
  });
  // The lane needs mcpmgr's own client undecorated: a decorator reads Responses (a 401 starts a login).
  const direct = options.fetch === undefined ? defaultUpstreamClient() : undefined;
  const doFetch: UpstreamFetch = options.fetch ?? (direct as NonNullable<typeof direct>).fetch;
  const headersTimeoutMs = options.headersTimeoutMs ?? defaultHeadersTimeoutMs;
  const origin = target.origin;
  const targetPath = target.pathname;
  const targetQuery = target.search.slice(1);

  /** The upstream URL: same path and query, except the MCP endpoint itself also carries the target's query. */
  const upstreamUrl = (requestUrl: string): string => upstreamUrlOf(pathAndQuery(requestUrl));
  const upstreamUrlOf = (requestTarget: string): string => {
    let pq = requestTarget;
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
  const refuseSession = (method: string, sessionId: string | null, url: string, caller: string | undefined) => {
    if (sessionId !== null) {
      if (sessions.hasEnded(sessionId)) return sessionNotFound();
      const owner = sessions.ownerOf(sessionId);
      // Without authentication there is no one to tell apart; a session opened before this
      // proxy started (or forgotten when idle) is left to the upstream.
      if (caller === undefined ? owner !== undefined && owner !== "" : owner !== caller) return sessionNotFound();
      return undefined;
    }
    if (!legacy.active || method === "GET" || method === "HEAD" || method === "OPTIONS") return undefined;
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

  const handler: Handler = async (req, ctx) => {
    const sessionId = req.headers.get("mcp-session-id");
    const url = upstreamUrl(req.url);
    const caller = callerOf(req);
    const method = req.method;
    const refused = refuseSession(method, sessionId, url, caller);
    if (refused !== undefined) return refused;
    const answer = await forward({
      method,
      url,
      sessionId,
      caller,
      headers: upstreamRequestHeaders(req.headers, { remoteAddress: ctx.remoteAddress, trustProxyHeaders }),
      body: requestBody(req, method),
      clientSignal: req.signal,
      keepOpen: ctx.keepOpen,
      incoming: req,
      protocolVersion: req.headers.get("mcp-protocol-version"),
      raw: false,
    });
    return answer instanceof WholeAnswer ? answer.toResponse() : answer;
  };

  const lane: ForwardLane | undefined =
    direct === undefined
      ? undefined
      : (head, body, client) => {
          // POSTs carry MCP's messages; streams (GET), session ends and the rest take the handler chain.
          if (head.method !== "POST" || head.minorVersion !== 1) return undefined;
          let sessionId: string | null = null;
          let protocolVersion: string | null = null;
          for (const [name, value] of head.headers) {
            if (name === "mcp-session-id") {
              // Two ids could be read two ways; the handler chain refuses such a request.
              if (sessionId !== null) return undefined;
              sessionId = value;
            } else if (name === "mcp-protocol-version") protocolVersion ??= value;
          }
          const url = upstreamUrlOf(head.target);
          if (refuseSession("POST", sessionId, url, undefined) !== undefined) return undefined;
          return forward({
            method: "POST",
            url,
            sessionId,
            caller: undefined,
            headers: upstreamRequestHeaders(headerPairs(head.headers), {
              remoteAddress: client.remoteAddress,
              trustProxyHeaders,
            }),
            body: body ?? undefined,
            clientSignal: client.signal,
            keepOpen: client.keepOpen,
            incoming: undefined,
            protocolVersion,
            raw: true,
          });
        };

  /** Sends one request upstream and makes its answer the client's. */
  async function forward(call: ForwardCall): Promise<Response | WholeAnswer> {
    const { method, url, sessionId, caller } = call;
    // A legacy SSE stream is a session too; refused up front, before its head goes out.
    if (method === "GET" && sessionId === null && sessions.full) return sessionLimitReached();

    // The lane's requests go to mcpmgr's own client, which takes the lighter Cancellation.
    const abort = direct !== undefined ? new Cancellation() : new AbortController();
    const abortSignal: AbortLike = abort instanceof Cancellation ? abort : abort.signal;
    const clientSignal = call.clientSignal;
    const onClientAbort = () => abort.abort(clientSignal.reason);
    clientSignal.addEventListener("abort", onClientAbort, { once: true });
    const timer = setTimeout(() => abort.abort(new UpstreamTimeout()), headersTimeoutMs);
    waiting.add(abort);

    let body: RequestBody;
    let answer: Response | WholeAnswer;
    try {
      body = await call.body;
      const init = {
        method,
        headers: call.headers,
        body,
        duplex: "half", // required for a streamed request body
        redirect: "manual",
        // Bodies pass through as the upstream sent them (and, with fetch, no Accept-Encoding of its own).
        decompress: false,
        // Bun's fetch drops sockets idle for 5 minutes by default: fatal for SSE.
        timeout: false,
        ...(call.incoming === undefined ? {} : { incoming: call.incoming }),
      } as const;
      answer =
        abort instanceof Cancellation
          ? await (direct as UpstreamClient).exchange(url, { ...init, signal: abort }, call.raw)
          : await doFetch(url, { ...init, signal: abort.signal });
    } catch (err) {
      clientSignal.removeEventListener("abort", onClientAbort);
      return upstreamFailure(err, abortSignal.reason, clientSignal.aborted);
    } finally {
      clearTimeout(timer);
      waiting.delete(abort);
    }

    if (answer instanceof WholeAnswer) {
      // The common answer (a JSON message, nothing to bind, check or rewrite) goes on as bytes.
      if (passesAsBytes(answer.head, method, sessionId)) {
        clientSignal.removeEventListener("abort", onClientAbort);
        return answer;
      }
      answer = answer.toResponse();
    }
    const upstream = answer;
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
      closeUpstreamSession(url, opened, call.protocolVersion);
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
      clientSignal.removeEventListener("abort", onClientAbort);
      return upstream;
    }

    call.keepOpen();
    // A compressed stream (the upstream ignored our identity-only request) cannot take comments.
    if (headers.has("content-encoding")) return upstream;
    let release: (() => void) | undefined;
    const incoming = call.incoming;
    const relayed = relaySse(stream, {
      live,
      ...(options.pingIntervalMs === undefined ? {} : { pingIntervalMs: options.pingIntervalMs }),
      ...(method === "GET" && incoming !== undefined
        ? {
            head: endpointEventRewriter((endpoint) => {
              // The legacy session's message URL, bound to the caller that opened the stream.
              const announced = parseUrl(endpoint, url);
              if (announced !== undefined && sessionId === null) release = legacy.announce(announced, caller ?? "");
              return publicEndpoint(endpoint, target, incoming, { endpointPrefix, trustProxyHeaders });
            }),
            onEnd: () => release?.(),
          }
        : {}),
      // A POST's stream owes an answer to each of its requests (their ids are read only if it ends early).
      ...(method === "POST"
        ? { answers: new PendingAnswers(() => requestIdsOf(body instanceof ReadableStream ? undefined : body)) }
        : {}),
      onCancel: () => abort.abort(),
      announceOpen: true,
    });
    return new Response(relayed, { status, statusText: upstream.statusText, headers });
  }

  /** Ends an upstream session this proxy refused to hand out (fire and forget). */
  function closeUpstreamSession(url: string, sessionId: string, version: string | null): void {
    const headers: [string, string][] = [["mcp-session-id", sessionId]];
    if (version !== null) headers.push(["mcp-protocol-version", version]);
    void doFetch(url, { method: "DELETE", headers, redirect: "manual", signal: AbortSignal.timeout(10_000) })
      .then((response) => response.body?.cancel())
      .catch(() => {});
  }

  return { handler, lane };
}

/**
 * Whether a whole answer goes to the client exactly as the upstream sent it: nothing for the
 * forwarder to do with it (no session to end, bind or normalise, no stream to relay, no field
 * that describes the upstream connection). Everything else becomes a Response and takes the
 * forwarder's ordinary path.
 */
function passesAsBytes(head: ResponseHead, method: string, sessionId: string | null): boolean {
  const status = head.status;
  if (sessionId !== null && (status === 404 || status === 400 || (method === "DELETE" && status < 300))) return false;
  const fields = head.headers;
  for (const [name, value] of fields) {
    if (name.length === 14 && name.toLowerCase() === "mcp-session-id" && value !== sessionId) return false;
    if (name.length === 12 && name.toLowerCase() === "content-type" && value.startsWith("text/event-stream"))
      return false;
  }
  return !hasHopByHopField(fields);
}

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

async function requestBody(req: Request, method: string): Promise<RequestBody> {
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

function upstreamFailure(err: unknown, abortReason: unknown, clientGone: boolean): Response {
  if (clientGone) {
    // Nobody is listening; the status is for logs only (nginx's "client closed request").
    return new Response(null, { status: 499 });
  }
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
