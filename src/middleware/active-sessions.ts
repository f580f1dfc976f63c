/**
 * Which MCP sessions are open, for the active-sessions metric. The proxy sees sessions
 * begin (initialize answered with Mcp-Session-Id, a legacy SSE stream opened) but not
 * always end: a client may vanish and the server expire the session. So a session ends
 * on DELETE, on a 404 for it (the server forgot it), when its legacy stream closes, or
 * when it has been idle longer than the server keeps idle sessions.
 */
import { watchBody } from "./watch-stream.ts";

export interface ActiveSessionsOptions {
  /** Called with +1 / -1 as sessions open and end. */
  readonly onChange: (delta: 1 | -1) => void;
  /** Idle time after which a session counts as gone (the bridge's idle expiry). */
  readonly idleMs: number;
  readonly now?: () => number;
}

export class ActiveSessions {
  readonly #lastSeen = new Map<string, number>();
  readonly #options: ActiveSessionsOptions;
  readonly #now: () => number;
  #lastSweep: number;

  constructor(options: ActiveSessionsOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#lastSweep = this.#now();
  }

  opened(id: string): void {
    if (this.#lastSeen.has(id)) return;
    this.#lastSeen.set(id, this.#now());
    this.#options.onChange(1);
  }

  /** A request for the session: it is still in use. Also sweeps idle sessions now and then. */
  seen(id: string): void {
    const now = this.#now();
    if (this.#lastSeen.has(id)) this.#lastSeen.set(id, now);
    // Sweeping is O(sessions): at most once a minute, on the request path but never per request.
    if (now - this.#lastSweep >= 60_000) this.sweep();
  }

  ended(id: string): void {
    if (this.#lastSeen.delete(id)) this.#options.onChange(-1);
  }

  sweep(): void {
    const now = this.#now();
    this.#lastSweep = now;
    for (const [id, seen] of this.#lastSeen) if (now - seen > this.#options.idleMs) this.ended(id);
  }

  /** Counts a legacy SSE stream as a session for as long as its body flows (never swept: it is open). */
  streamed(response: Response): Response {
    if (response.body === null) return response;
    const onChange = this.#options.onChange;
    onChange(1);
    return watchBody(response, { onEnd: () => onChange(-1) });
  }
}
