/**
 * The Cedar engine (@cedar-policy/cedar-wasm) as the Cedar evaluator runs it: policy sets checked
 * (config/authz-config.ts `policyProblem`), read (cedar-policies.ts `policyFacts`) and parsed once
 * under an id, decisions taken on them, and a set's room given back when its client goes. Only the
 * evaluator process (cedar-evaluator.ts) imports this module: it is the one process that pays for
 * the engine's WebAssembly, whatever the number of workloads with policies.
 *
 * Decisions fail closed: a forbid policy that cannot be evaluated on a call denies it (Cedar skips
 * a policy that errs, which would let a malformed request walk past a forbid). A trap of the
 * WebAssembly instance (a `WebAssembly.RuntimeError`: out of bounds, unreachable) leaves its
 * memory in a state nothing vouches for: it is thrown as `EngineTrap`, for the evaluator to answer
 * that request as a failure and exit, so that the next client starts a clean one. So is a stack
 * overflow within it (a `RangeError`: JavaScriptCore reports one so when the call starts deep in
 * the evaluator's own stack, as in a turn of cedar-turns.ts): the engine's code stopped half-way
 * just the same (the next call into that instance was seen to fail out of bounds).
 */
import { preparsePolicySet, statefulIsAuthorized } from "@cedar-policy/cedar-wasm/nodejs";
import { policyProblem } from "../config/authz-config.ts";
import { errorMessage } from "../errors.ts";
import { policyFacts } from "./cedar-policies.ts";
import type { Decision, DecisionRequest, WireFacts } from "./cedar-wire.ts";

export class EngineTrap extends Error {
  constructor(cause: unknown) {
    super(`the Cedar engine trapped: ${errorMessage(cause)}`, { cause });
  }
}

/** A policy set parsed by the engine, under `id`. */
export interface LoadedSet {
  readonly id: string;
  readonly forbids: ReadonlySet<string>;
  readonly entities: readonly unknown[];
}

export type LoadOutcome =
  | { readonly set: LoadedSet; readonly facts: WireFacts }
  | { readonly invalid: string; readonly hint: string };

const isTrap = (err: unknown) => err instanceof WebAssembly.RuntimeError || err instanceof RangeError;

/** Runs an engine call; a trap is an EngineTrap, anything else is thrown as it is. */
function guarded<T>(call: () => T): T {
  try {
    return call();
  } catch (err) {
    if (isTrap(err)) throw new EngineTrap(err);
    throw err;
  }
}

/**
 * `policies` parsed under `id`; with `check` (they come from a file), first checked as
 * `--authz-config` checks them, scopes that never match included.
 */
export function loadPolicySet(id: string, policies: string, entities: readonly unknown[], check: boolean): LoadOutcome {
  return guarded(() => {
    const problem = check ? policyProblem(policies, entities) : undefined;
    if (problem !== undefined) return { invalid: problem.why, hint: problem.hint };
    const facts = policyFacts(policies);
    // Parsed once and referred to by id: parsing per request was most of the cost. By id, so that
    // a diagnostic's policy id says which policy it is and whether it forbids.
    const parsed = preparsePolicySet(id, { staticPolicies: facts.byId });
    if (parsed.type === "failure")
      return {
        invalid: `the Cedar policies do not parse: ${parsed.errors.map((e) => e.message).join("; ")}`,
        hint: "check the policy syntax (https://docs.cedarpolicy.com)",
      };
    return { set: { id, forbids: facts.forbids, entities }, facts: facts.wire };
  });
}

/**
 * The engine keeps parsed sets by id and has no call to drop one: the id is parsed again with no
 * policies, which gives back the room the set took (the evaluator reuses freed ids).
 */
export function freePolicySet(id: string): void {
  guarded(() => preparsePolicySet(id, { staticPolicies: {} }));
}

/** One decision (throws EngineTrap only). */
export function evaluate(set: LoadedSet, request: DecisionRequest): Decision {
  let answer: ReturnType<typeof statefulIsAuthorized>;
  try {
    answer = statefulIsAuthorized({
      principal: { type: "Client", id: request.subject },
      action: { type: "Action", id: request.action },
      resource: { type: request.type, id: request.id },
      context: request.context as never,
      preparsedPolicySetId: set.id,
      entities: set.entities as never,
    });
  } catch (err) {
    if (isTrap(err)) throw new EngineTrap(err);
    // cedar-wasm throws on input it cannot read (a name with a lone surrogate): a denial, not a crash.
    return { allowed: false, reason: `Cedar could not evaluate the request: ${errorMessage(err)}`, forbidden: true };
  }
  if (answer.type === "failure")
    return {
      allowed: false,
      reason: `Cedar could not evaluate the request: ${answer.errors.map((e) => e.message).join("; ")}`,
      forbidden: true,
    };
  const { decision, diagnostics } = answer.response;
  const failed = diagnostics.errors.map((e) => `${e.policyId} could not be evaluated (${e.error.message})`);
  // Cedar skips a policy that errs; a forbid that errs on a call may be one that was meant to apply.
  const failedForbid = request.strict ? diagnostics.errors.find((e) => set.forbids.has(e.policyId)) : undefined;
  if (failedForbid)
    return {
      allowed: false,
      reason: `forbid policy ${failedForbid.policyId} could not be evaluated (${failedForbid.error.message})`,
      forbidden: true,
    };
  if (decision === "allow") return { allowed: true };
  const why = diagnostics.reason.length > 0 ? `forbidden by ${diagnostics.reason.join(", ")}` : "no policy permits it";
  return {
    allowed: false,
    reason: failed.length > 0 ? `${why}; ${failed.join("; ")}` : why,
    forbidden: diagnostics.reason.length > 0,
    ...(diagnostics.reason.length > 0 && failed.length === 0 ? { forbiddenBy: diagnostics.reason } : {}),
  };
}
