/**
 * Authorization with Cedar (`--authz-config`), evaluated by the Cedar engine
 * (@cedar-policy/cedar-wasm), entity model per docs/file-formats.md: principal `Client::"<sub>"` (the
 * authenticated subject, or `Client::"local"` without authentication), actions
 * `Action::"call_tool" | "get_prompt" | "read_resource"`, resources `Tool::"name"`,
 * `Prompt::"name"`, `Resource::"uri"`; the token's claims are in the context as `claim_*`
 * and the call's arguments as `arg_*`, mapped exactly or not at all (cedar-context.ts). Lists
 * are filtered by the same policies. Methods that touch nothing (initialize, ping,
 * notifications, lists) pass; any other method is denied unless it is one of the three
 * actions (default deny). A call is denied, with the reason in the audit line, when a value a
 * policy reads has no exact Cedar value, when an argument key differs from an attribute a
 * policy reads only by case, and when a forbid policy cannot be evaluated (Cedar would skip
 * it): the policies fail closed.
 */
import { randomUUID } from "node:crypto";
import { preparsePolicySet, statefulIsAuthorized } from "@cedar-policy/cedar-wasm/nodejs";
import type { AuthzConfig } from "../config/authz-config.ts";
import { errorMessage } from "../errors.ts";
import type { Middleware } from "../proxy/handler.ts";
import { JsonRpcCode, jsonRpcError } from "../proxy/jsonrpc.ts";
import { targetOf, type JsonRpcMessage, type McpTarget } from "../proxy/mcp-message.ts";
import { principalOf } from "./caller.ts";
import { cedarValueOf, Unmappable, type CedarValue } from "./cedar-context.ts";
import { policyFacts, readsArguments, readsClaims, type ContextReads, type PolicyFacts } from "./cedar-policies.ts";
import { markDenied } from "./denials.ts";
import { privateToCaller, rewriteResults } from "./result-rewriter.ts";
import { checkedBody, forwardWith, readRpcBody, rewrittenBody } from "./rpc-body.ts";
import { foldKey } from "./strict-json.ts";

const passThrough = new Set([
  "initialize",
  "ping",
  "tools/list",
  "prompts/list",
  "resources/list",
  "resources/templates/list",
  "logging/setLevel",
  // MCP 2026-07-28: discovery replaces initialize, and a listen stream only carries notifications.
  "server/discover",
  "subscriptions/listen",
]);
/** The Cedar action and resource type for each kind of target. */
const cedar: Readonly<Record<McpTarget["kind"], { action: string; type: string }>> = {
  tool: { action: "call_tool", type: "Tool" },
  prompt: { action: "get_prompt", type: "Prompt" },
  resource: { action: "read_resource", type: "Resource" },
};
/** List results, and the field naming each listed item. */
const listed: readonly { field: string; kind: McpTarget["kind"]; key: "name" | "uri" }[] = [
  { field: "tools", kind: "tool", key: "name" },
  { field: "prompts", kind: "prompt", key: "name" },
  { field: "resources", kind: "resource", key: "uri" },
];

interface Decision {
  readonly allowed: boolean;
  /** Why not, for the audit line. */
  readonly reason?: string;
  /** Why not, for the client too: what in its own request Cedar could not hold. */
  readonly unmappable?: boolean;
  /** Denied by something other than the lack of a permit: a forbid policy, or one that could not be evaluated. */
  readonly forbidden?: boolean;
}

/**
 * Other names of one tool or prompt, for an endpoint whose names can change under the policies (a
 * gateway's `--name-prefix when-needed`): a permit on any of `permit` allows it, a forbid on any of
 * `forbid` denies it, so a policy keeps applying when another workload makes the name change.
 */
export interface NameAliases {
  readonly permit: readonly string[];
  readonly forbid: readonly string[];
}

/** What an endpoint adds to the Cedar middleware (the gateway; `run` and `proxy` give none of it). */
export interface AuthzEndpoint {
  /** The endpoint's own tools (search mode's find_tool and call_tool), decided on by what they reach. */
  readonly own?: ReadonlySet<string>;
  readonly aliases?: ((kind: "tool" | "prompt", name: string) => NameAliases | undefined) | undefined;
  /**
   * A call of a tool the caller's lists do not show, refused, is answered as for a tool that does not
   * exist (the reason stays in audit), so a caller cannot tell the names it may not see. `instead` may
   * give the message to forward in its place (search mode's call_tool, which the gateway answers for
   * an unknown name); otherwise the answer is `Unknown tool: NAME`, as the tool filter gives.
   */
  readonly hiddenAsUnknown?:
    | { readonly instead?: (req: Request, message: JsonRpcMessage) => JsonRpcMessage | undefined }
    | undefined;
}

/** What the policies that may apply to one resource read, ready for building contexts. */
interface ReadScope {
  readonly reads: ContextReads;
  readonly claims: boolean;
  readonly args: boolean;
  /** Fold key → attribute read, to catch argument keys a case-insensitive server reads as it. */
  readonly folds: ReadonlyMap<string, string>;
  readonly nestedFolds: ReadonlyMap<string, string>;
}

/** Facts are worked out once per configuration (the chain asks before it builds the middleware). */
const factsOf = new WeakMap<AuthzConfig, PolicyFacts>();
function facts(config: AuthzConfig): PolicyFacts {
  let known = factsOf.get(config);
  if (known === undefined) {
    known = policyFacts(config.policies);
    factsOf.set(config, known);
  }
  return known;
}

/** Whether the policies read the call's arguments (then the message checks cover their keys too). */
export function inspectsArguments(config: AuthzConfig): boolean {
  return readsArguments(facts(config).reads);
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

type Decide = (req: Request, action: string, type: string, id: string, call?: { args: unknown }) => Decision;

/** The Cedar decision for a request's principal, with the policies parsed once and answers remembered. */
function cedarDecider(config: AuthzConfig): { decide: Decide; argsMatter: boolean } {
  const known = facts(config);
  const { forbids } = known;
  // Parsed once by the engine and referred to by id: parsing per request was most of the cost.
  // By id, so that a diagnostic's policy id says which policy it is and whether it forbids.
  const policySetId = `mcpmgr-${randomUUID()}`;
  const parsed = preparsePolicySet(policySetId, { staticPolicies: known.byId });
  if (parsed.type === "failure")
    throw new Error(`Cedar policies failed to parse: ${parsed.errors.map((e) => e.message).join("; ")}`);
  // The same question gets the same answer (policies and entities are fixed): remember the
  // last few thousand, which covers list filtering and repeated calls.
  const decisions = new Map<string, Decision>();
  // What no policy reads cannot change an answer: only the attributes that the policies
  // which may apply to the resource read go into the context. Then a call's decision can be
  // remembered whatever its other arguments.
  const argsMatter = readsArguments(known.reads);
  const scopes = new WeakMap<ContextReads, ReadScope>();
  const scopeOf = (type: string, id: string): ReadScope => {
    const reads = known.readsFor(type, id);
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

  /** The context of a request, or why it has none Cedar can hold exactly. */
  const contextOf = (
    scope: ReadScope,
    claims: Readonly<Record<string, unknown>> | undefined,
    args: unknown,
  ): Record<string, CedarValue> | Unmappable => {
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
  };

  /** `call`: a call decided with its arguments, where a forbid policy that cannot be evaluated denies. */
  const decide = (req: Request, action: string, type: string, id: string, call?: { args: unknown }): Decision => {
    const principal = principalOf(req);
    const subject = principal?.subject ?? "local";
    const context = contextOf(scopeOf(type, id), principal?.claims, call?.args);
    if (context instanceof Unmappable)
      return { allowed: false, reason: context.why, unmappable: true, forbidden: true };
    // Calls whose arguments are read are not remembered: their keys could be as large as the body.
    const cacheable = !argsMatter || call === undefined || Object.keys(context).every((k) => !k.startsWith("arg_"));
    const key = cacheable
      ? `${call ? "call" : "list"}\u0000${subject}\u0000${action}\u0000${type}\u0000${id}\u0000${JSON.stringify(context)}`
      : "";
    const remembered = cacheable ? decisions.get(key) : undefined;
    if (remembered !== undefined) return remembered;
    const decision = evaluate(subject, action, type, id, context, call !== undefined);
    if (cacheable) {
      decisions.set(key, decision);
      if (decisions.size > 5_000) decisions.delete(decisions.keys().next().value as string);
    }
    return decision;
  };

  const evaluate = (
    subject: string,
    action: string,
    type: string,
    id: string,
    context: Record<string, CedarValue>,
    strict: boolean,
  ): Decision => {
    let answer: ReturnType<typeof statefulIsAuthorized>;
    try {
      answer = statefulIsAuthorized({
        principal: { type: "Client", id: subject },
        action: { type: "Action", id: action },
        resource: { type, id },
        context: context as never,
        preparsedPolicySetId: policySetId,
        entities: config.entities as never,
      });
    } catch (err) {
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
    const failedForbid = strict ? diagnostics.errors.find((e) => forbids.has(e.policyId)) : undefined;
    if (failedForbid)
      return {
        allowed: false,
        reason: `forbid policy ${failedForbid.policyId} could not be evaluated (${failedForbid.error.message})`,
        forbidden: true,
      };
    if (decision === "allow") return { allowed: true };
    const why =
      diagnostics.reason.length > 0 ? `forbidden by ${diagnostics.reason.join(", ")}` : "no policy permits it";
    return {
      allowed: false,
      reason: failed.length > 0 ? `${why}; ${failed.join("; ")}` : why,
      forbidden: diagnostics.reason.length > 0,
    };
  };

  return { decide, argsMatter };
}

/**
 * A decision on a tool or prompt under all its names (`aliases`): denied when any name a forbid may
 * name is forbidden, else allowed when any name a permit may name is permitted.
 */
function decideNamed(decide: Decide, aliases: AuthzEndpoint["aliases"]): Decide {
  if (aliases === undefined) return decide;
  return (req, action, type, id, call) => {
    const kind = type === "Tool" ? "tool" : type === "Prompt" ? "prompt" : undefined;
    const names = kind ? aliases(kind, id) : undefined;
    if (names === undefined) return decide(req, action, type, id, call);
    let permitted: Decision | undefined;
    let refused: Decision | undefined;
    for (const name of new Set([id, ...names.permit, ...names.forbid])) {
      const decision = decide(req, action, type, name, call);
      if (!decision.allowed && decision.forbidden && (name === id || names.forbid.includes(name)))
        return decision.reason && name !== id
          ? { ...decision, reason: `${decision.reason} (as ${type}::${JSON.stringify(name)})` }
          : decision;
      if (decision.allowed && (name === id || names.permit.includes(name))) permitted ??= decision;
      else if (name === id) refused = decision;
    }
    return permitted ?? refused ?? { allowed: false, reason: "no policy permits it" };
  };
}

/**
 * Whether the caller of `req` may call a tool, as list filtering decides it (no arguments): what a
 * search-mode gateway's find_tool shows that caller. Loads its own copy of the policies.
 */
export function toolVisibility(
  config: AuthzConfig,
  aliases?: AuthzEndpoint["aliases"],
): (req: Request, tool: string) => boolean {
  const decide = decideNamed(cedarDecider(config).decide, aliases);
  return (req, tool) => decide(req, cedar.tool.action, cedar.tool.type, tool).allowed;
}

export function cedarAuthorization(config: AuthzConfig, endpoint: AuthzEndpoint = {}): Middleware {
  const own = endpoint.own ?? new Set<string>();
  const decider = cedarDecider(config);
  const { argsMatter } = decider;
  const decide = decideNamed(decider.decide, endpoint.aliases);
  return (next) => async (req, ctx) => {
    const raw = await readRpcBody(req);
    let forward = req;
    if (raw !== undefined) {
      const body = checkedBody(req, raw, { arguments: argsMatter });
      if (body instanceof Response) return markDenied(body);
      const refusal = refuse(req, body.messages);
      if (refusal instanceof Response) return refusal;
      if (refusal !== undefined) {
        // A hidden tool's call that the endpoint answers as an unknown name: forwarded in its place,
        // and the answer marked as the refusal it is, for audit.
        const headers = new Headers(req.headers);
        headers.delete("content-length");
        if (headers.has("mcp-name")) headers.set("mcp-name", String(refusal.message.params?.name));
        const replaced = forwardWith(req, rewrittenBody(refusal.message), headers);
        return markDenied(await next(replaced, ctx), { reason: refusal.reason });
      }
      forward = forwardWith(req, body);
    }
    // Every answer, GET streams included (legacy SSE answers arrive there).
    return rewriteResults(
      await next(forward, ctx),
      (message) => filterLists(req, message),
      (data) => /"(tools|prompts|resources)"/.test(data),
    );
  };

  function refuse(
    req: Request,
    messages: readonly JsonRpcMessage[],
  ): Response | { message: JsonRpcMessage; reason: string } | undefined {
    for (const message of messages) {
      // Responses pass; a request sent without an id (as a notification) is decided all the same.
      if (typeof message !== "object" || message === null || typeof message.method !== "string") continue;
      if (passThrough.has(message.method) || message.method.startsWith("notifications/")) continue;
      const target = targetOf(message);
      if (target?.kind === "tool" && own.has(target.name)) continue;
      const rule = target ? cedar[target.kind] : undefined;
      const decision: Decision =
        target !== undefined && rule !== undefined
          ? decide(req, rule.action, rule.type, target.name, { args: message.params?.arguments })
          : { allowed: false, reason: `${message.method} is not an action Cedar policies decide on` };
      if (!decision.allowed) {
        const reason = `Cedar: ${decision.reason ?? "denied"}`;
        const hidden =
          endpoint.hiddenAsUnknown !== undefined &&
          target?.kind === "tool" &&
          rule !== undefined &&
          !decide(req, rule.action, rule.type, target.name).allowed;
        if (hidden && target) {
          const instead = messages.length === 1 ? endpoint.hiddenAsUnknown?.instead?.(req, message) : undefined;
          if (instead !== undefined) return { message: instead, reason };
          // As the tool filter answers a name it hides (tool-filter.ts), and the gateway one it does not know.
          const status = (req.headers.get("accept") ?? "").includes("text/event-stream") ? 200 : 403;
          return markDenied(
            jsonRpcError(status, JsonRpcCode.invalidParams, `Unknown tool: ${target.name}`, { id: message.id ?? null }),
            { reason },
          );
        }
        const what = target && rule ? `${rule.action} on ${rule.type}::${JSON.stringify(target.name)}` : message.method;
        const text = `Forbidden: ${what} is not permitted${decision.unmappable ? ` (${decision.reason})` : ""}`;
        return markDenied(jsonRpcError(403, -32001, text, { id: message.id ?? null }), {
          ...(decision.reason !== undefined ? { reason } : {}),
        });
      }
    }
    return undefined;
  }

  /** Lists show only what the same policies would allow, decided without arguments. */
  function filterLists(req: Request, message: JsonRpcMessage): JsonRpcMessage {
    const result = message.result as Record<string, unknown> | undefined;
    if (typeof result !== "object" || result === null) return message;
    for (const rule of listed) {
      const items = result[rule.field];
      if (!Array.isArray(items)) continue;
      const { action, type } = cedar[rule.kind];
      const visible = items.filter((item) => {
        const key = (item as Record<string, unknown>)?.[rule.key];
        if (rule.kind === "tool" && typeof key === "string" && own.has(key)) return true;
        return typeof key === "string" && decide(req, action, type, key).allowed;
      });
      return { ...message, result: privateToCaller({ ...result, [rule.field]: visible }) };
    }
    return message;
  }
}
