/**
 * What the Cedar policies are, read once from their JSON form (the engine's own parse,
 * policyToJson): each policy's id and effect, so that a forbid policy that cannot be
 * evaluated can deny (Cedar skips a policy that errors, which would let a malformed request
 * walk past a forbid); and which context attributes they read, so that only those are
 * mapped into the context, a request whose read values Cedar cannot hold exactly is denied,
 * and an argument key that differs from a read attribute only by case is caught.
 * `policyFacts` runs where the engine is (the Cedar evaluator, cedar-engine.ts); a client gets
 * what the policies read over the wire (`readsFromWire`) and never loads the engine.
 */
import { isObject } from "../objects.ts";
import type { WireFacts, WireReads } from "./cedar-wire.ts";

export interface ContextReads {
  /** Some policy uses `context` as a whole (`context == {...}`): every attribute matters. */
  readonly whole: boolean;
  /** Attributes of the context that policies read: `context.x`, `context["x"]`, `context has x`. */
  readonly attributes: ReadonlySet<string>;
  /** Attribute names read below those: `context.arg_t.amount` reads "amount". */
  readonly nested: ReadonlySet<string>;
}

/** What the policies read: all they need to build a request's context, on either side of the wire. */
export interface PolicyReads {
  /** What all the policies read together. */
  readonly reads: ContextReads;
  /**
   * What the policies that may apply to one resource read: a policy scoped to
   * `resource == Tool::"transfer"` reads nothing of a call to another tool.
   */
  readsFor(type: string, id: string): ContextReads;
}

export interface PolicyFacts extends PolicyReads {
  /** The policies by id (each policy's @id annotation, else policy0, policy1, … in file order). */
  readonly byId: Readonly<Record<string, string>>;
  readonly forbids: ReadonlySet<string>;
  /** What the policies read, for the wire. */
  readonly wire: WireFacts;
}

/** The attribute path an expression names inside the context (`context.a.b` → [a, b]), or undefined. */
function contextPath(expr: unknown): string[] | undefined {
  if (!isObject(expr)) return undefined;
  if (expr.Var === "context") return [];
  const dot = expr["."];
  if (!isObject(dot) || typeof dot.attr !== "string") return undefined;
  const left = contextPath(dot.left);
  return left && [...left, dot.attr];
}

class ReadsCollector implements ContextReads {
  whole = false;
  readonly attributes = new Set<string>();
  readonly nested = new Set<string>();

  add(other: ContextReads): this {
    this.whole ||= other.whole;
    for (const name of other.attributes) this.attributes.add(name);
    for (const name of other.nested) this.nested.add(name);
    return this;
  }

  read(path: readonly string[]): void {
    if (path.length === 0) {
      this.whole = true;
      return;
    }
    this.attributes.add(path[0] as string);
    for (const name of path.slice(1)) this.nested.add(name);
  }

  walk(node: unknown): void {
    if (Array.isArray(node)) {
      for (const item of node) this.walk(item);
      return;
    }
    if (!isObject(node) || "Value" in node) return;
    if (node.Var === "context") {
      this.read([]);
      return;
    }
    for (const op of [".", "has"]) {
      const access = node[op];
      if (!isObject(access)) continue;
      const path = contextPath(access.left);
      if (path === undefined) continue;
      const attr = access.attr;
      this.read([...path, ...(Array.isArray(attr) ? (attr as string[]) : [attr as string])]);
      return;
    }
    // A record literal's keys are names, not expressions.
    const values = isObject(node.Record) ? Object.values(node.Record) : Object.values(node);
    for (const value of values) this.walk(value);
  }
}

/** The resource a policy is scoped to (`resource == Type::"id"`), or undefined when it may apply to any. */
function scopedResource(scope: unknown): string | undefined {
  if (!isObject(scope) || scope.op !== "==" || !isObject(scope.entity)) return undefined;
  const { type, id } = scope.entity as { type?: unknown; id?: unknown };
  return typeof type === "string" && typeof id === "string" ? resourceKey(type, id) : undefined;
}

const resourceKey = (type: string, id: string) => `${type}\u0000${id}`;

/** `policies`: the policy set's text, already known to parse. */
export function policyFacts(policies: string): PolicyFacts {
  // Required here: only the Cedar evaluator (and a test) reads policies; their clients import this module for the rest.
  const { policySetTextToParts, policyToJson } =
    require("@cedar-policy/cedar-wasm/nodejs") as typeof import("@cedar-policy/cedar-wasm/nodejs");
  const parts = policySetTextToParts(policies);
  if (parts.type === "failure")
    throw new Error(`Cedar policies failed to parse: ${parts.errors.map((e) => e.message).join("; ")}`);
  const byId: Record<string, string> = {};
  const forbids = new Set<string>();
  const everywhere = new ReadsCollector();
  const scoped = new Map<string, ReadsCollector>();
  parts.policies.forEach((text, index) => {
    const json = policyToJson(text);
    if (json.type === "failure")
      throw new Error(`Cedar policy ${index} failed to parse: ${json.errors.map((e) => e.message).join("; ")}`);
    const named = json.json.annotations?.id;
    let id = typeof named === "string" && named !== "" && !(named in byId) ? named : `policy${index}`;
    while (id in byId) id = `${id}'`;
    byId[id] = text;
    if (json.json.effect === "forbid") forbids.add(id);
    const resource = scopedResource(json.json.resource);
    let reads = everywhere;
    if (resource !== undefined) {
      reads = scoped.get(resource) ?? new ReadsCollector();
      scoped.set(resource, reads);
    }
    for (const clause of json.json.conditions) reads.walk(clause.body);
  });
  const all = new ReadsCollector().add(everywhere);
  for (const reads of scoped.values()) {
    all.add(reads);
    reads.add(everywhere);
  }
  const wire: WireFacts = {
    everywhere: readsToWire(everywhere),
    scoped: [...scoped].map(([key, reads]) => {
      const cut = key.indexOf("\u0000");
      return [key.slice(0, cut), key.slice(cut + 1), readsToWire(reads)] as const;
    }),
  };
  return {
    byId,
    forbids,
    wire,
    reads: all,
    readsFor: (type, id) => scoped.get(resourceKey(type, id)) ?? everywhere,
  };
}

const readsToWire = (reads: ContextReads): WireReads => ({
  whole: reads.whole,
  attributes: [...reads.attributes],
  nested: [...reads.nested],
});

function readsFromJson(wire: WireReads): ReadsCollector {
  const reads = new ReadsCollector();
  reads.whole = wire.whole === true;
  for (const name of wire.attributes) reads.attributes.add(String(name));
  for (const name of wire.nested) reads.nested.add(String(name));
  return reads;
}

/** What the policies read, as the evaluator sent it (`PolicyFacts.wire`). */
export function readsFromWire(wire: WireFacts): PolicyReads {
  const everywhere = readsFromJson(wire.everywhere);
  const scoped = new Map(wire.scoped.map(([type, id, reads]) => [resourceKey(type, id), readsFromJson(reads)]));
  const all = new ReadsCollector().add(everywhere);
  for (const reads of scoped.values()) all.add(reads);
  return { reads: all, readsFor: (type, id) => scoped.get(resourceKey(type, id)) ?? everywhere };
}

/** Whether some policy reads the call's arguments (`context.arg_*`, or the whole context). */
export function readsArguments(reads: ContextReads): boolean {
  return reads.whole || [...reads.attributes].some((name) => name.startsWith("arg_"));
}

/** Whether some policy reads the token's claims (`context.claim_*`, or the whole context). */
export function readsClaims(reads: ContextReads): boolean {
  return reads.whole || [...reads.attributes].some((name) => name.startsWith("claim_"));
}
