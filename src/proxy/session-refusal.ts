/**
 * A `404 Session not found` that refuses a request for another caller's session is the same answer,
 * to the caller, as one for a session that ended (nothing tells it the session exists), but the
 * session goes on. The front ends that refuse so mark the request; the active-sessions metric
 * (middleware/telemetry.ts) ends a session only on a 404 to a request that is not marked (review 12,
 * F12). The mark is on the request's context, which every middleware passes on as it is: policies
 * between the metric and the front end (the tool filter, audit) answer with a Response of their own.
 */
import type { RequestContext } from "./handler.ts";

const foreign = new WeakSet<RequestContext>();

/** `response` refuses the request of `ctx` for another caller's session, which goes on. */
export function markForeignSession(ctx: RequestContext, response: Response): Response {
  foreign.add(ctx);
  return response;
}

/** The 404 to this request refused it another caller's session, which still exists. */
export function refusedForeignSession(ctx: RequestContext): boolean {
  return foreign.has(ctx);
}
