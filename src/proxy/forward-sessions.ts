/**
 * Upstream sessions as the transparent forwarder keeps them (forward.ts), on the session tracker
 * (session-tracker.ts) and the legacy streams' message URLs (legacy-sessions.ts). Sessions belong
 * to the caller that opened them: another caller's request for one, or a request for one that
 * ended, is answered 404 here and never reaches the upstream. A session the upstream opens is
 * bound to its caller, or closed again past MCPMGR_MAX_SESSIONS; the upstreams' ways of saying
 * "unknown session" become the one answer that makes clients re-initialise.
 */
import type { UpstreamFetch } from "./authenticated-fetch.ts";
import { brokenBody } from "./forward-failures.ts";
import { sanitiseResponseHeaders } from "./headers.ts";
import { JsonRpcCode, jsonRpcError, sessionLimitReached } from "./jsonrpc.ts";
import type { RequestContext } from "./handler.ts";
import { LegacySessions } from "./legacy-sessions.ts";
import { readAhead } from "./read-ahead.ts";
import { markForeignSession } from "./session-refusal.ts";
import { SessionTracker } from "./session-tracker.ts";

/** Where a forwarded request goes, and for whom. */
export interface ForwardRoute {
  /** The session it names; null for none (a 2026-07-28 request belongs to none, whatever it carries). */
  readonly sessionId: string | null;
  /** The upstream URL. */
  readonly url: string;
  /** Who it acts as (undefined without authentication). */
  readonly caller: string | undefined;
  /** It names 2026-07-28 or later: its Mcp-Session-Id is not sent on. */
  readonly perRequest: boolean;
  /** A relayed stream takes the session's hold, to end it when the stream ends (undefined: no session). */
  readonly takeHold: () => (() => void) | undefined;
}

export interface ForwardedSessionsOptions {
  readonly target: URL;
  /** Default: one with `maxSessions` and `sessionIdleMs`. */
  readonly sessions?: SessionTracker | undefined;
  readonly maxSessions?: number | undefined;
  readonly sessionIdleMs?: number | undefined;
  /** The upstream fetch, to end a session upstream that this proxy refused to hand out. */
  readonly fetch: UpstreamFetch;
}

export class ForwardedSessions {
  /**
   * The sessions' table. The forwarder holds a session through it directly (`tracker.hold`) while
   * a request of the session is in progress, so that eviction and expiry spare it.
   */
  readonly tracker: SessionTracker;
  readonly #legacy: LegacySessions;
  readonly #targetPath: string;
  readonly #fetch: UpstreamFetch;

  constructor(options: ForwardedSessionsOptions) {
    const target = options.target;
    this.#fetch = options.fetch;
    this.#targetPath = target.pathname;
    this.tracker =
      options.sessions ??
      new SessionTracker({
        ...(options.maxSessions !== undefined ? { maxSessions: options.maxSessions } : {}),
        ...(options.sessionIdleMs !== undefined ? { idleMs: options.sessionIdleMs } : {}),
        // A session that gave way to a new one is ended upstream too (its client gets 404 here).
        onEvicted: (sessionId) => this.#closeUpstream(target.href, sessionId),
      });
    this.#legacy = new LegacySessions(this.tracker);
  }

  /**
   * Whether `req` may go on: undefined when it may; else the refusal. A session is its owner's
   * only (404, as for a session that does not exist); a new legacy SSE stream needs room (503).
   */
  refuse(
    req: Request,
    ctx: RequestContext,
    sessionId: string | null,
    url: string,
    caller: string | undefined,
  ): Response | undefined {
    if (sessionId !== null) {
      if (this.tracker.hasEnded(sessionId)) return sessionNotFound();
      const owner = this.tracker.ownerOf(sessionId);
      // Without authentication there is no one to tell apart; a session opened before this
      // proxy started (or forgotten when idle) is left to the upstream.
      // Another's session: the same answer as for none, marked so that it is not counted as the session's end.
      if (caller === undefined ? owner !== undefined && owner !== "" : owner !== caller)
        return owner === undefined ? sessionNotFound() : markForeignSession(ctx, sessionNotFound());
      return undefined;
    }
    const method = req.method;
    // A legacy SSE stream is a session too; refused up front, before its head goes out.
    if (method === "GET") return this.tracker.full ? sessionLimitReached() : undefined;
    if (!this.#legacy.active || method === "HEAD" || method === "OPTIONS") return undefined;
    const target = new URL(url);
    const owner = this.#legacy.ownerOf(target);
    if (owner === undefined) {
      // With authentication, a message to a variant of an announced path (/messages/, //messages)
      // could still reach a session at the upstream: only the MCP endpoint and announced paths pass.
      return caller !== undefined && target.pathname !== this.#targetPath ? sessionNotFound() : undefined;
    }
    if (owner === null) return caller === undefined ? undefined : sessionNotFound();
    return owner === (caller ?? "") ? undefined : sessionNotFound();
  }

  /**
   * What the upstream's answer to `req` means for the sessions: a DELETE that succeeded ends its
   * session, an "unknown session" error ends it too, a session the answer opens is bound to its
   * caller. Undefined when the answer goes on to the client; else the answer to give instead.
   * `opened`: the answer's Mcp-Session-Id, if any.
   */
  answered(
    upstream: Response,
    req: Request,
    method: string,
    route: ForwardRoute,
    opened: string | null,
  ): Response | Promise<Response> | undefined {
    const sessionId = route.sessionId;
    if (sessionId !== null) {
      const status = upstream.status;
      if (method === "DELETE" && status >= 200 && status < 300) this.tracker.markEnded(sessionId);
      else if (status === 404 || status === 400) return this.#sessionError(upstream, sessionId);
    }
    // A new session (an initialize's answer; some clients still send their old id with it) is
    // bound to the caller that opened it; past the limit it is closed again.
    if (opened !== null && opened !== sessionId && !this.tracker.bind(opened, route.caller ?? ""))
      return this.#refuseOpened(upstream, route.url, opened, req);
    return undefined;
  }

  /**
   * A legacy SSE stream announced `endpoint`: the session's message URL, bound to the caller that
   * opened the stream. Returns the function to call when the stream ends (undefined: nothing bound).
   */
  announced(endpoint: string, route: ForwardRoute): (() => void) | undefined {
    const url = parseUrl(endpoint, route.url);
    return url !== undefined && route.sessionId === null ? this.#legacy.announce(url, route.caller ?? "") : undefined;
  }

  async #sessionError(upstream: Response, sessionId: string): Promise<Response> {
    const normalised = await normaliseSessionError(upstream);
    if (normalised === "broken") return brokenBody();
    if (normalised !== undefined) {
      this.tracker.markEnded(sessionId);
      return normalised;
    }
    sanitiseResponseHeaders(upstream.headers);
    return readAhead(upstream);
  }

  async #refuseOpened(upstream: Response, url: string, opened: string, req: Request): Promise<Response> {
    await upstream.body?.cancel().catch(() => {});
    this.#closeUpstream(url, opened, req);
    return sessionLimitReached();
  }

  /** Ends an upstream session this proxy refused to hand out (fire and forget). */
  #closeUpstream(url: string, sessionId: string, req?: Request): void {
    const headers: [string, string][] = [["mcp-session-id", sessionId]];
    const version = req?.headers.get("mcp-protocol-version") ?? null;
    if (version !== null) headers.push(["mcp-protocol-version", version]);
    void this.#fetch(url, { method: "DELETE", headers, redirect: "manual", signal: AbortSignal.timeout(10_000) })
      .then((response) => response.body?.cancel())
      .catch(() => {});
  }
}

function parseUrl(text: string, base: string): URL | undefined {
  try {
    return new URL(text, base);
  } catch {
    return undefined;
  }
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
