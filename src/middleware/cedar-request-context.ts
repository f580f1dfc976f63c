/**
 * What one request puts in Cedar's context: the token's claims as `claim_*` and the call's
 * arguments as `arg_*`, each mapped exactly or not at all (cedar-context.ts). Only the attributes
 * that the policies which may apply to the resource read go in: what no policy reads cannot change
 * an answer, and leaving it out lets a decision be remembered whatever the call's other
 * arguments. An argument key that differs from an attribute a policy reads only by case is no
 * context at all: a server that matches keys case-insensitively reads "Amount" as the "amount" a
 * policy reads, so the call must be refused rather than decided without it.
 */
import { cedarValueOf, type CedarValue, Unmappable } from "./cedar-context.ts";
import { type ContextReads, type PolicyReads, readsArguments, readsClaims } from "./cedar-policies.ts";
import { foldKey } from "./strict-json.ts";

/** What the policies that may apply to one resource read, ready for building contexts. */
export interface ReadScope {
  readonly reads: ContextReads;
  readonly claims: boolean;
  readonly args: boolean;
  /** Fold key → attribute read, to catch argument keys a case-insensitive server reads as it. */
  readonly folds: ReadonlyMap<string, string>;
  readonly nestedFolds: ReadonlyMap<string, string>;
}

/** The read scope of a resource under these policies; worked out once per set of reads. */
export function readScopes(facts: PolicyReads): (type: string, id: string) => ReadScope {
  const scopes = new WeakMap<ContextReads, ReadScope>();
  return (type, id) => {
    const reads = facts.readsFor(type, id);
    let scope = scopes.get(reads);
    if (scope === undefined) {
      scope = {
        reads,
        claims: readsClaims(reads),
        args: readsArguments(reads),
        folds: new Map([...reads.attributes].map((name) => [foldKey(name), name])),
        nestedFolds: new Map([...reads.nested].map((name) => [foldKey(name), name])),
      };
      scopes.set(reads, scope);
    }
    return scope;
  };
}

/** Keys inside a value that differ from a name the policies read only by case, at any depth. */
function caseVariant(
  value: unknown,
  names: ReadonlyMap<string, string>,
  exact: ReadonlySet<string>,
): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const read = names.get(foldKey(key));
    if (read !== undefined && !exact.has(key))
      return `${JSON.stringify(key)} differs from ${read}, which a policy reads, only by case`;
    const inner = caseVariant(item, names, exact);
    if (inner) return inner;
  }
  return undefined;
}

/** The context of a request, or why it has none Cedar can hold exactly. */
export function requestContext(
  scope: ReadScope,
  claims: Readonly<Record<string, unknown>> | undefined,
  args: unknown,
): Record<string, CedarValue> | Unmappable {
  const { reads } = scope;
  const wanted = (attribute: string) => reads.whole || reads.attributes.has(attribute);
  const context: Record<string, CedarValue> = Object.create(null);
  if (scope.claims)
    for (const [name, value] of Object.entries(claims ?? {})) {
      const attribute = `claim_${name}`;
      if (!wanted(attribute)) continue;
      const mapped = cedarValueOf(value);
      if (mapped instanceof Unmappable) return new Unmappable(`claim ${name}: ${mapped.why}`);
      context[attribute] = mapped;
    }
  if (!scope.args || args === undefined) return context;
  if (typeof args !== "object" || args === null || Array.isArray(args))
    return new Unmappable("the arguments are not an object");
  for (const [name, value] of Object.entries(args)) {
    const attribute = `arg_${name}`;
    const read = scope.folds.get(foldKey(attribute));
    // A server that matches keys case-insensitively reads "Amount" as the "amount" a policy reads.
    if (read !== undefined && !reads.attributes.has(attribute))
      return new Unmappable(
        `argument ${JSON.stringify(name)} differs from ${read}, which a policy reads, only by case`,
      );
    if (!wanted(attribute)) continue;
    const variant = caseVariant(value, scope.nestedFolds, reads.nested);
    if (variant) return new Unmappable(`argument ${JSON.stringify(name)}: the key ${variant}`);
    const mapped = cedarValueOf(value);
    if (mapped instanceof Unmappable) return new Unmappable(`argument ${JSON.stringify(name)}: ${mapped.why}`);
    context[attribute] = mapped;
  }
  return context;
}
