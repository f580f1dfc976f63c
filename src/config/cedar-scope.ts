/**
 * Whether each Cedar policy's scope can ever match a request mcpmgr makes. Cedar parses
 * `Action::"call_tools"` or `resource == Tools::"echo"` without complaint, and such a policy
 * simply never applies: a permit with a typo makes every call default-deny, a forbid with one
 * lets through what it was written to stop. mcpmgr asks about three actions only, on entities
 * of fixed types, so a scope naming another action or type is a mistake, found at start-up.
 * Names the policy file's own entities define (a group a principal is `in`, an action group)
 * are taken as they are.
 */
import { isObject } from "../objects.ts";

/** The actions mcpmgr asks Cedar about, and the type of the resource each one goes with. */
const ACTIONS: Readonly<Record<string, string>> = {
  call_tool: "Tool",
  get_prompt: "Prompt",
  read_resource: "Resource",
};
const PRINCIPAL_TYPE = "Client";

export const CEDAR_NAMES_HINT = `mcpmgr asks about principal Client::"<sub>", actions ${Object.entries(ACTIONS)
  .map(([action, type]) => `Action::"${action}" on ${type}::"…"`)
  .join(", ")} (docs/policies.md#authorization---authz-config)`;

interface EntityRef {
  readonly type: string;
  readonly id: string;
}

const refOf = (value: unknown): EntityRef | undefined =>
  isObject(value) && typeof value.type === "string" && typeof value.id === "string"
    ? { type: value.type, id: value.id }
    : undefined;

const show = (ref: EntityRef) => `${ref.type}::${JSON.stringify(ref.id)}`;

/** The entity types and the action ids the file's entities_json defines (entities and their parents). */
function definedNames(entities: readonly unknown[]): { types: Set<string>; actions: Set<string> } {
  const types = new Set<string>();
  const actions = new Set<string>();
  const note = (value: unknown) => {
    const ref = refOf(isObject(value) && "__entity" in value ? value.__entity : value);
    if (ref === undefined) return;
    types.add(ref.type);
    if (ref.type === "Action") actions.add(ref.id);
  };
  for (const entity of entities) {
    if (!isObject(entity)) continue;
    note(entity.uid);
    if (Array.isArray(entity.parents)) for (const parent of entity.parents) note(parent);
  }
  return { types, actions };
}

/**
 * The first reason a policy in `policies` (text that parses) can never apply, as
 * `policyN … names …`, or undefined when every scope names what mcpmgr asks about.
 */
export function unmatchableScope(policies: string, entities: readonly unknown[]): string | undefined {
  // Required here: authz-config.ts loads the Cedar engine only when a policy file is given.
  const { policySetTextToParts, policyToJson } =
    require("@cedar-policy/cedar-wasm/nodejs") as typeof import("@cedar-policy/cedar-wasm/nodejs");
  const parts = policySetTextToParts(policies);
  if (parts.type === "failure") return undefined;
  const defined = definedNames(entities);
  for (const [index, text] of parts.policies.entries()) {
    const json = policyToJson(text);
    if (json.type === "failure") continue;
    const named = json.json.annotations?.id;
    const policy = typeof named === "string" && named !== "" ? `policy ${JSON.stringify(named)}` : `policy${index}`;
    const problem = scopeProblem(json.json as unknown as Record<string, unknown>, defined);
    if (problem !== undefined) return `${policy} ${problem}, so it never applies`;
  }
  return undefined;
}

function scopeProblem(
  policy: Record<string, unknown>,
  defined: { types: Set<string>; actions: Set<string> },
): string | undefined {
  const { principal, action, resource } = policy as Record<string, Record<string, unknown> | undefined>;
  // Actions: each one named must be one mcpmgr asks about, or an action group the entities define.
  const actionRefs = [refOf(action?.entity), ...(Array.isArray(action?.entities) ? action.entities.map(refOf) : [])];
  const actionIds = new Set<string>();
  for (const ref of actionRefs) {
    if (ref === undefined) continue;
    if (!(ref.id in ACTIONS) && !defined.actions.has(ref.id))
      return `names ${show(ref)}, an action mcpmgr never asks about`;
    // A request's action is always one of the three: `==` an action group never holds (`in` does).
    if (action?.op === "==" && !(ref.id in ACTIONS))
      return `compares action with ${show(ref)}, an action group, which no request's action equals (write action in ${show(ref)})`;
    actionIds.add(ref.id);
  }
  // Resources and principals: the type compared or tested (==, is) must be the one mcpmgr
  // gives; a type only named as a parent (`in`) may be one the entities define.
  const resourceTypes = new Set(Object.values(ACTIONS));
  const checkSide = (scope: Record<string, unknown> | undefined, allowed: Set<string>, side: string) => {
    if (scope === undefined) return undefined;
    const exact = scope.op === "==" ? refOf(scope.entity) : undefined;
    if (exact !== undefined && !allowed.has(exact.type))
      return `compares ${side} with ${show(exact)}, a type mcpmgr never gives a ${side}`;
    if (scope.op === "is" && typeof scope.entity_type === "string" && !allowed.has(scope.entity_type))
      return `tests ${side} is ${scope.entity_type}, a type mcpmgr never gives a ${side}`;
    const parent = scope.op === "in" ? refOf(scope.entity) : isObject(scope.in) ? refOf(scope.in.entity) : undefined;
    if (parent !== undefined && !allowed.has(parent.type) && !defined.types.has(parent.type))
      return `names ${side} in ${show(parent)}, a type neither mcpmgr nor the policy file's entities_json has`;
    return undefined;
  };
  const principalProblem = checkSide(principal, new Set([PRINCIPAL_TYPE]), "principal");
  if (principalProblem !== undefined) return principalProblem;
  const resourceProblem = checkSide(resource, resourceTypes, "resource");
  if (resourceProblem !== undefined) return resourceProblem;
  // An action that goes with another resource type than the one the scope names (call_tool on a Prompt).
  const resourceType =
    resource?.op === "==" ? refOf(resource.entity)?.type : resource?.op === "is" ? resource.entity_type : undefined;
  if (typeof resourceType === "string" && actionIds.size > 0) {
    const fits = [...actionIds].some((id) => !(id in ACTIONS) || ACTIONS[id] === resourceType);
    if (!fits)
      return `pairs ${[...actionIds].map((id) => `Action::${JSON.stringify(id)}`).join(", ")} with a ${resourceType}, which mcpmgr never asks about together (${Object.entries(
        ACTIONS,
      )
        .map(([id, type]) => `${id} goes with ${type}`)
        .join(", ")})`;
  }
  return undefined;
}
