/**
 * A `404 Session not found` that refuses a request for another caller's session is the same answer,
 * to the caller, as one for a session that ended (nothing tells it the session exists), but the
 * session goes on. The front ends that refuse so mark the response; the active-sessions metric
 * (middleware/telemetry.ts) ends a session only on a 404 that is not marked (review 12, F12).
 */
const foreign = new WeakSet<Response>();

export function markForeignSession(response: Response): Response {
  foreign.add(response);
  return response;
}

/** The 404 refused another caller's request for a session that still exists. */
export function refusedForeignSession(response: Response): boolean {
  return foreign.has(response);
}
