/**
 * What the transparent proxy knows about upstream sessions:
 * - which ones have ended (DELETEd, or reported unknown by the upstream): a request for one
 *   gets 404 + JSON-RPC -32001 at once, the answer that makes MCP clients re-initialise;
 * - who opened each session it saw created (the caller of the initialize whose answer
 *   carried the new Mcp-Session-Id, or of the legacy SSE stream that announced it), so
 *   another caller who learns the id is refused before anything reaches the upstream;
 * - how many are open, against MCPMGR_MAX_SESSIONS: when full, the least recently used session
 *   idle for the grace time gives way (session-eviction.ts; it is ended, and the forwarder ends it
 *   upstream), so a burst of abandoned sessions cannot lock others out until the idle timeout.
 * Bounded: a client cycling session ids cannot grow it without limit; a session without
 * requests for the idle time is forgotten (a legacy stream's, never while it is open; nor one with
 * a request or stream in progress: `hold`).
 */
import { evictionGraceMs, sessionToEvict } from "./session-eviction.ts";

export interface SessionTrackerOptions {
  /** Sessions bound at once (default 1,000). */
  readonly maxSessions?: number;
  /** A session without requests for this long is forgotten (default 30 minutes). */
  readonly idleMs?: number;
  /** Ended ids remembered (default 10,000). */
  readonly endedCapacity?: number;
  readonly now?: () => number;
  /** A session ended to make room for a new one (the forwarder ends it upstream too). */
  readonly onEvicted?: (sessionId: string) => void;
}

interface Binding {
  readonly owner: string;
  lastSeen: number;
  /** A legacy SSE session: it lives as long as its stream, not by requests. */
  readonly pinned: boolean;
  /** Its requests in progress (a POST's answer still streaming, a GET stream): such a session is in use. */
  open: number;
}

export class SessionTracker {
  readonly #ended = new Set<string>();
  readonly #bindings = new Map<string, Binding>();
  readonly #endedCapacity: number;
  readonly #maxSessions: number;
  readonly #idleMs: number;
  readonly #now: () => number;
  readonly #onEvicted: ((sessionId: string) => void) | undefined;

  constructor(options: SessionTrackerOptions = {}) {
    this.#onEvicted = options.onEvicted;
    this.#endedCapacity = options.endedCapacity ?? 10_000;
    this.#maxSessions = options.maxSessions ?? 1_000;
    this.#idleMs = options.idleMs ?? 30 * 60_000;
    this.#now = options.now ?? (() => performance.now());
  }

  markEnded(sessionId: string): void {
    this.#bindings.delete(sessionId);
    if (this.#ended.size >= this.#endedCapacity) {
      const oldest = this.#ended.values().next().value;
      if (oldest !== undefined) this.#ended.delete(oldest);
    }
    this.#ended.add(sessionId);
  }

  hasEnded(sessionId: string): boolean {
    return this.#ended.has(sessionId);
  }

  /**
   * The caller a session is bound to (a request for it counts as use), or undefined when this
   * proxy did not see it created or has forgotten it.
   */
  ownerOf(sessionId: string): string | undefined {
    const binding = this.#bindings.get(sessionId);
    if (binding === undefined) return undefined;
    const now = this.#now();
    if (this.#expired(binding, now)) {
      this.#bindings.delete(sessionId);
      return undefined;
    }
    binding.lastSeen = now;
    return binding.owner;
  }

  /**
   * A request of the session is in progress until the returned function is called (its answer ended):
   * meanwhile the session neither gives way to a new one nor expires, whatever its last request's age.
   */
  hold(sessionId: string): () => void {
    const binding = this.#bindings.get(sessionId);
    if (binding === undefined) return () => {};
    binding.open++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      binding.open--;
      binding.lastSeen = this.#now();
    };
  }

  #expired(binding: Binding, now: number): boolean {
    return !binding.pinned && binding.open === 0 && now - binding.lastSeen > this.#idleMs;
  }

  /**
   * Binds a new session to the caller that opened it; false when MCPMGR_MAX_SESSIONS are
   * already bound and none may give way (never for a legacy stream's `pinned` session, which was
   * admitted with its GET). A session already bound keeps its first owner. An id that
   * had ended is live again: the upstream opened a session under it anew (a server may hand out
   * the same id to every session; ending one must not refuse all its later ones).
   */
  bind(sessionId: string, owner: string, options: { pinned?: boolean } = {}): boolean {
    if (this.#bindings.has(sessionId)) return true;
    if (this.#atLimit()) {
      const evicted = this.#evictable();
      if (evicted !== undefined) {
        this.markEnded(evicted);
        this.#onEvicted?.(evicted);
      } else if (options.pinned !== true) return false;
      // A legacy stream was admitted with its GET (forward-sessions.ts `refuse`); streams admitted together
      // may announce past the limit: each is still bound to its caller (unbound, its own messages were refused).
    }
    this.#ended.delete(sessionId);
    this.#bindings.set(sessionId, { owner, lastSeen: this.#now(), pinned: options.pinned === true, open: 0 });
    return true;
  }

  /** Whether another session would be refused: the limit is reached and none may give way. */
  get full(): boolean {
    return this.#atLimit() && this.#evictable() === undefined;
  }

  /** At MCPMGR_MAX_SESSIONS after forgetting the expired ones. */
  #atLimit(): boolean {
    if (this.#bindings.size < this.#maxSessions) return false;
    this.#sweep();
    return this.#bindings.size >= this.#maxSessions;
  }

  #evictable(): string | undefined {
    const graceMs = evictionGraceMs(this.#idleMs);
    return sessionToEvict(
      this.#bindings,
      (b) => b.lastSeen,
      (b) => b.pinned || b.open > 0,
      this.#now(),
      graceMs,
    );
  }

  forget(sessionId: string): void {
    this.#bindings.delete(sessionId);
  }

  /** O(sessions): only when the limit is reached. */
  #sweep(): void {
    const now = this.#now();
    for (const [id, binding] of this.#bindings) if (this.#expired(binding, now)) this.#bindings.delete(id);
  }
}
