/**
 * A group member's side of the gateway key (state/gateway-guard.ts): a request whose Authorization is
 * `Bearer <the installation's gateway key>` comes from the group's gateway, which has already applied
 * its own authentication, tool filter, Cedar policies and audit; it passes this endpoint's
 * authentication (authn.ts asks `cameFromGateway`), and the key, like any Authorization, never goes
 * upstream (proxy/headers.ts). While a gateway with policies guards the group, a member without
 * authentication of its own refuses every other caller, so those policies cannot be bypassed by
 * calling the member directly; a member with its own `--oidc-*` still admits its own tokens, and takes
 * the key in place of one only while a gateway that authenticates its callers guards the group (a
 * gateway without `--oidc-*` would otherwise open it to anyone who can reach that gateway).
 */
import { requestState } from "../auth/request-state.ts";
import { GATEWAY_KEY_PREFIX, type GroupGuard } from "../state/gateway-guard.ts";
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
  /** Which gateways guard the group right now. */
  readonly guard: () => GroupGuard;
  /** The endpoint has incoming authentication of its own (then it decides on everyone else). */
  readonly ownAuthentication: boolean;
  /**
   * What a refused direct caller is told, when the way through the gateway does not apply (a foreground
   * run, which no gateway serves); by default, to connect through the gateway.
   */
  readonly refusal?: string;
  /**
   * How long an answer of `guard` is kept, so a request costs no file system look-up; also how often
   * at most a key that does not match is read again (the key may have been replaced).
   */
  readonly recheckMs?: number;
  readonly now?: () => number;
}

/** Compared in constant time (node:crypto would be a start-up cost for every workload's proxy). */
function sameSecret(presented: string, key: string): boolean {
  if (presented.length !== key.length) return false;
  let difference = 0;
  for (let i = 0; i < key.length; i++) difference |= presented.charCodeAt(i) ^ key.charCodeAt(i);
  return difference === 0;
}

/** How long a member keeps its answer of which gateways guard its group, by default. */
export const MEMBER_GUARD_RECHECK_MS = 1_000;

export function memberGuard(options: MemberGuardOptions): Middleware {
  const recheckMs = options.recheckMs ?? MEMBER_GUARD_RECHECK_MS;
  const clock = options.now ?? Date.now;
  let known: (GroupGuard & { at: number }) | undefined;
  const guard = (fresh = false): GroupGuard => {
    const now = clock();
    if (fresh || known === undefined || now - known.at >= recheckMs) known = { ...options.guard(), at: now };
    return known;
  };
  // Read when first needed (the first gateway may make the key after this member started), and again
  // when a presented key does not match, at most once per recheckMs: the key may have been replaced, and
  // a caller sending made-up keys must not make every request read a file.
  let key: { value: string | undefined; at: number } | undefined;
  const matchesKey = (presented: string): boolean => {
    const now = clock();
    if (key === undefined) key = { value: options.key(), at: now };
    if (key.value !== undefined && sameSecret(presented, key.value)) return true;
    if (now - key.at < recheckMs) return false;
    key = { value: options.key(), at: now };
    return key.value !== undefined && sameSecret(presented, key.value);
  };
  return (next) => async (req, ctx) => {
    const header = req.headers.get("authorization");
    if (header?.startsWith(`Bearer ${GATEWAY_KEY_PREFIX}`) && matchesKey(header.slice("Bearer ".length).trim())) {
      // A member with its own authentication takes the key in place of a token only from a gateway that
      // authenticated its caller; read afresh when the cached answer says no, as a gateway just started asks.
      if (!options.ownAuthentication || guard().authenticated || guard(true).authenticated) {
        fromGateway.set(req, true);
        return next(req, ctx);
      }
      return markDenied(
        jsonRpcError(
          403,
          -32001,
          `Forbidden: this workload has its own --oidc-* and takes the gateway key only from a gateway that authenticates its callers; give the gateway of group '${options.group}' --oidc-*`,
        ),
        { reason: "gateway key from a gateway without authentication" },
      );
    }
    if (options.ownAuthentication || !guard().guarded) return next(req, ctx);
    return markDenied(
      jsonRpcError(
        403,
        -32001,
        options.refusal ??
          `Forbidden: workload group '${options.group}' is served by a gateway with policies; connect through the gateway instead: its URL is in 'mcpmgr list' (a foreground gateway's in its terminal; give it to 'mcpmgr proxy stdio'; an AI client: 'mcpmgr client register CLIENT --group ${options.group} --gateway')`,
      ),
      { reason: "not through the group's gateway" },
    );
  };
}
