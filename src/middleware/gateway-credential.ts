/**
 * A group member's side of the gateway key (state/gateway-guard.ts): a request whose Authorization is
 * `Bearer <the installation's gateway key>` comes from the group's gateway, which has already applied
 * its own authentication, tool filter, Cedar policies and audit; it passes this endpoint's
 * authentication (authn.ts asks `cameFromGateway`), and the key, like any Authorization, never goes
 * upstream (proxy/headers.ts). While a gateway with policies guards the group, a member without
 * authentication of its own refuses every other caller, so those policies cannot be bypassed by
 * calling the member directly; a member with its own `--oidc-*` still admits its own tokens.
 */
import { requestState } from "../auth/request-state.ts";
import type { Middleware } from "../proxy/handler.ts";
import { jsonRpcError } from "../proxy/jsonrpc.ts";
import { markDenied } from "./denials.ts";

const fromGateway = requestState<true>();

/** Whether the request carried the gateway key (then the endpoint's own authentication does not apply). */
export function cameFromGateway(req: Request): boolean {
  return fromGateway.has(req);
}

export interface MemberGuardOptions {
  readonly group: string;
  /** The installation's gateway key, or undefined while there is none. */
  readonly key: () => string | undefined;
  /** Whether a gateway with policies guards the group right now. */
  readonly guarded: () => boolean;
  /** The endpoint has incoming authentication of its own (then it decides on everyone else). */
  readonly ownAuthentication: boolean;
  /** How long an answer of `guarded` is kept, so a request costs no file system look-up. */
  readonly recheckMs?: number;
}

/** Compared in constant time (node:crypto would be a start-up cost for every workload's proxy). */
function sameSecret(presented: string, key: string): boolean {
  if (presented.length !== key.length) return false;
  let difference = 0;
  for (let i = 0; i < key.length; i++) difference |= presented.charCodeAt(i) ^ key.charCodeAt(i);
  return difference === 0;
}

export function memberGuard(options: MemberGuardOptions): Middleware {
  const recheckMs = options.recheckMs ?? 1_000;
  let known: { guarded: boolean; at: number } | undefined;
  let key: string | undefined;
  const guarded = (): boolean => {
    const now = Date.now();
    if (known === undefined || now - known.at >= recheckMs) known = { guarded: options.guarded(), at: now };
    return known.guarded;
  };
  return (next) => async (req, ctx) => {
    const header = req.headers.get("authorization");
    if (header?.startsWith("Bearer mcpmgr-gateway-")) {
      // Read when first needed: the first gateway may make the key after this member started.
      key ??= options.key();
      if (key !== undefined && sameSecret(header.slice("Bearer ".length).trim(), key)) {
        fromGateway.set(req, true);
        return next(req, ctx);
      }
    }
    if (options.ownAuthentication || !guarded()) return next(req, ctx);
    return markDenied(
      jsonRpcError(
        403,
        -32001,
        `Forbidden: workload group '${options.group}' is served by a gateway with policies; connect through the gateway (mcpmgr list shows its URL)`,
      ),
      { reason: "not through the group's gateway" },
    );
  };
}
