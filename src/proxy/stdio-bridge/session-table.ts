/**
 * The bridge's open sessions (2025-era clients; a 2026-07-28 request's own context is never one
 * of them), bounded both ways: at MCPMGR_MAX_SESSIONS a new session ends the least recently used
 * idle one (proxy/session-eviction.ts), or is refused when every session is in use; a session
 * without requests for the idle time ends, unless a request of its own is still at the server.
 * Ending a session is the bridge's (bridge.ts `endSession`): it removes the session from here.
 */
import { randomUUID } from "node:crypto";
import { evictionGraceMs, sessionToEvict } from "../session-eviction.ts";
import type { FlightTable } from "./flight-table.ts";
import { ClientSession } from "./session.ts";

export interface SessionTableOptions {
  /** Sessions open at once (default 1,000, MCPMGR_MAX_SESSIONS). */
  readonly maxSessions?: number | undefined;
  /** Sessions without any request for this long end (default 30 minutes). */
  readonly sessionIdleMs?: number | undefined;
  /** The requests at the server: a session with one there is in use. */
  readonly flights: FlightTable;
  /** Ends a session given way to a new one, or idle too long. */
  readonly end: (session: ClientSession) => void;
}

export class SessionTable {
  readonly #sessions = new Map<string, ClientSession>();
  readonly #maxSessions: number;
  readonly #idleMs: number;
  readonly #flights: FlightTable;
  readonly #end: (session: ClientSession) => void;

  constructor(options: SessionTableOptions) {
    this.#maxSessions = options.maxSessions ?? defaultMaxSessions;
    this.#idleMs = options.sessionIdleMs ?? 30 * 60_000;
    this.#flights = options.flights;
    this.#end = options.end;
  }

  get size(): number {
    return this.#sessions.size;
  }

  values(): IterableIterator<ClientSession> {
    return this.#sessions.values();
  }

  /** A new session bound to `principal` (the caller that opened it, "" without authentication). */
  open(principal: string): ClientSession {
    const session = new ClientSession(randomUUID());
    session.principal = principal;
    this.#sessions.set(session.id, session);
    return session;
  }

  /**
   * The session `id`, if it is open and `principal` opened it: another caller who learnt the
   * id gets nothing, exactly as for an id that never existed.
   */
  get(id: string, principal: string): ClientSession | undefined {
    const session = this.#sessions.get(id);
    return session && !session.ended && session.principal === principal ? session : undefined;
  }

  /** Whether a session that has not ended has this id, whoever it belongs to. */
  has(id: string): boolean {
    const session = this.#sessions.get(id);
    return session !== undefined && !session.ended;
  }

  /** Takes `session` out of the table; false when it was not in it (already ended). */
  delete(session: ClientSession): boolean {
    return this.#sessions.delete(session.id);
  }

  /**
   * Whether a new session may open: below the limit, or after ending the least recently used idle
   * session (proxy/session-eviction.ts); false when every session is in use (the front end answers 503).
   */
  makeRoom(): boolean {
    if (this.#sessions.size < this.#maxSessions) return true;
    const graceMs = evictionGraceMs(this.#idleMs);
    const working = this.#sessionsWaiting();
    // In use: a legacy SSE session, a POST's stream open, a request at the server, or its GET stream open.
    const busy = (session: ClientSession) =>
      session.pinned || session.openSinks.size > 0 || working.has(session) || session.standalone?.canStream === true;
    const id = sessionToEvict(this.#sessions, (s) => s.lastActivity, busy, performance.now(), graceMs);
    const session = id === undefined ? undefined : this.#sessions.get(id);
    if (session === undefined) return false;
    this.#end(session);
    return true;
  }

  /** Ends the sessions idle at `now`. */
  expireIdle(now: number): void {
    // A session with a request in flight is not idle: its client waits on it (a long tool run).
    const working = this.#sessionsWaiting();
    for (const session of [...this.#sessions.values()]) {
      if (now - session.lastActivity > this.#idleMs && !working.has(session)) this.#end(session);
    }
  }

  /** The sessions with a request of theirs at the server. */
  #sessionsWaiting(): Set<ClientSession> {
    const working = new Set<ClientSession>();
    for (const flight of this.#flights.values()) if (flight.session !== undefined) working.add(flight.session);
    return working;
  }
}

const defaultMaxSessions = 1_000;
