/**
 * Which session gives way when the table of a workload, proxy or gateway is full
 * (MCPMGR_MAX_SESSIONS). Refusing every new session until the idle timeout (30 minutes) let any
 * local process lock every client out with a burst of sessions it then abandons (review 9 F6).
 * The rule: a new session ends the least recently used one that has had no request for the
 * grace time and has none in progress; only when every session is in use is the new one refused
 * (503). A client whose session was ended that way gets 404 on its next request and opens a new
 * one, as MCP asks of it. Scanning is O(sessions), only when the table is full.
 */

/**
 * How long a session must have gone without requests before a new one may take its place: a
 * minute, or a tenth of MCPMGR_SESSION_IDLE_TIMEOUT when that is shorter.
 */
export function evictionGraceMs(sessionIdleMs: number): number {
  return Math.min(60_000, sessionIdleMs / 10);
}

/**
 * The id of the session to end for a new one, or undefined when none may give way: the least
 * recently used of those idle for at least `graceMs` (`lastUsed` on the same clock as `now`)
 * and not `busy` (a request in progress, a stream that is the session).
 */
export function sessionToEvict<T>(
  sessions: Iterable<readonly [string, T]>,
  lastUsed: (session: T) => number,
  busy: (session: T) => boolean,
  now: number,
  graceMs: number,
): string | undefined {
  let found: string | undefined;
  let oldest = now - graceMs;
  for (const [id, session] of sessions) {
    const used = lastUsed(session);
    if (used <= oldest && !busy(session)) {
      found = id;
      oldest = used;
    }
  }
  return found;
}
