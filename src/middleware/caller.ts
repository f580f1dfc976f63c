/**
 * Who a request acts as, once incoming authentication (authn.ts) has verified its token. Kept
 * apart from the authentication middleware so that what binds state to a caller (the bridge's
 * and the forwarder's sessions, audit, authorization) loads without the token verifier: a
 * workload without incoming authentication never loads jose or oauth4webapi.
 */
import type { Principal } from "../auth/incoming/verifier.ts";
import { requestState } from "../auth/request-state.ts";

const principals = requestState<Principal>();

/** Records the verified principal of `req` (authn.ts, after the token checks out). */
export function setPrincipal(req: Request, principal: Principal): void {
  principals.set(req, principal);
}

/** The authenticated caller of a request (undefined without incoming authentication). */
export function principalOf(req: Request): Principal | undefined {
  return principals.get(req);
}

/**
 * Who a request acts as, for binding state to its caller (sessions, legacy SSE streams,
 * input-round state): the token's `sub`, or its `client_id` for a client-credentials token
 * without one, kept apart so a client cannot pose as a user of the same name. Undefined
 * without incoming authentication (then every caller is the same anonymous one).
 */
export function callerOf(req: Request): string | undefined {
  const principal = principals.get(req);
  if (principal === undefined) return undefined;
  return typeof principal.claims.sub === "string" ? `sub:${principal.subject}` : `client:${principal.subject}`;
}
