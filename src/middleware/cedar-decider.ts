/**
 * Cedar decisions (`--authz-config`) by the Cedar engine (@cedar-policy/cedar-wasm), entity model
 * per docs/file-formats.md: principal `Client::"<sub>"` (the authenticated subject, or
 * `Client::"local"` without authentication), actions `Action::"call_tool" | "get_prompt" |
 * "read_resource"`, resources `Tool::"name"`, `Prompt::"name"`, `Resource::"uri"`, the context
 * built by cedar-request-context.ts. The policies are parsed once and the same question gets the
 * remembered answer. A call is denied when its context cannot be built exactly and when a forbid
 * policy cannot be evaluated on it (Cedar would skip it): the policies fail closed. Under several
 * names (a gateway's renamed tools) a decision is taken on every spelling (`decideNamed`).
 */
import { randomUUID } from "node:crypto";
import { preparsePolicySet, statefulIsAuthorized } from "@cedar-policy/cedar-wasm/nodejs";
import type { AuthzConfig } from "../config/authz-config.ts";
import { errorMessage } from "../errors.ts";
import type { McpTarget } from "../proxy/mcp-message.ts";
import { principalOf } from "./caller.ts";
import { type CedarValue, Unmappable } from "./cedar-context.ts";
import { policyFacts, readsArguments, type PolicyFacts } from "./cedar-policies.ts";
import { readScopes, requestContext } from "./cedar-request-context.ts";

/** The Cedar action and resource type for each kind of target. */
export const cedarRules: Readonly<Record<McpTarget["kind"], { action: string; type: string }>> = {
  tool: { action: "call_tool", type: "Tool" },
  prompt: { action: "get_prompt", type: "Prompt" },
  resource: { action: "read_resource", type: "Resource" },
};

export interface Decision {
  readonly allowed: boolean;
  /** Why not, for the audit line. */
  readonly reason?: string;
  /** Why not, for the client too: what in its own request Cedar could not hold. */
  readonly unmappable?: boolean;
  /** Denied by something other than the lack of a permit: a forbid policy, or one that could not be evaluated. */
  readonly forbidden?: boolean;
  /** The forbid policies that matched (a denial Cedar could evaluate in full); absent otherwise. */
  readonly forbiddenBy?: readonly string[];
}

/** `call`: a call decided with its arguments, where a forbid policy that cannot be evaluated denies. */
export type Decide = (req: Request, action: string, type: string, id: string, call?: { args: unknown }) => Decision;

/**
 * Other names of one tool or prompt, for an endpoint whose names can change under the policies (a
 * gateway's `--name-prefix when-needed`): a permit on any of `permit` allows it, a forbid on any of
 * `forbid` denies it, so a policy keeps applying when another workload makes the name change.
 */
export interface NameAliases {
  readonly permit: readonly string[];
  readonly forbid: readonly string[];
}

export type AliasesOf = (kind: "tool" | "prompt", name: string) => NameAliases | undefined;

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

/** The Cedar decision for a request's principal, with the policies parsed once and answers remembered. */
export function cedarDecider(config: AuthzConfig): { decide: Decide; argsMatter: boolean } {
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
  // Only what the policies that may apply to a resource read goes into its context
  // (cedar-request-context.ts), so a call's decision can be remembered whatever its other arguments.
  const argsMatter = readsArguments(known.reads);
  const scopeOf = readScopes(known);

  const decide: Decide = (req, action, type, id, call) => {
    const principal = principalOf(req);
    const subject = principal?.subject ?? "local";
    const context = requestContext(scopeOf(type, id), principal?.claims, call?.args);
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
      ...(diagnostics.reason.length > 0 && failed.length === 0 ? { forbiddenBy: diagnostics.reason } : {}),
    };
  };

  return { decide, argsMatter };
}

/**
 * A decision on a tool or prompt under all its names (`aliases`): denied when any name a forbid may
 * name is forbidden, else allowed when any name a permit may name is permitted.
 */
export function decideNamed(decide: Decide, aliases: AliasesOf | undefined): Decide {
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
 * Other spellings of a resource URI that servers read as the same resource: the WHATWG URL form
 * (scheme and host lower-cased, `.` and `..` segments resolved: what the TypeScript SDK looks a
 * resource up by) and that form with percent-encoded unreserved characters decoded and the other
 * escapes in upper case (RFC 3986 §6.2.2, as servers that map URIs to paths read them); and each of
 * those without its fragment, and without its query and fragment: a fragment never names another
 * resource, and servers that map a `file:` URI to a path (`fileURLToPath`, `new URL(uri).pathname`)
 * drop both, so `file:///srv/secret.txt?x` read what a forbid on `file:///srv/secret.txt` refused.
 * Only forbids are decided on these, so a spelling that is another resource to some server only ever
 * denies more. Empty when the URI is not a URL.
 */
export function resourceSpellings(uri: string): string[] {
  if (!URL.canParse(uri)) return [];
  const href = new URL(uri).href;
  const unreserved = href.replace(/%([0-9A-Fa-f]{2})/g, (encoded, hex: string) => {
    const char = String.fromCharCode(Number.parseInt(hex, 16));
    return /[A-Za-z0-9\-._~]/.test(char) ? char : encoded.toUpperCase();
  });
  const decoded = URL.canParse(unreserved) ? new URL(unreserved).href : unreserved;
  const shorter = [href, decoded].flatMap((spelling) => {
    if (!URL.canParse(spelling)) return [];
    const url = new URL(spelling);
    url.hash = "";
    const withoutFragment = url.href;
    url.search = "";
    return [withoutFragment, url.href];
  });
  const variants = [href, decoded, ...shorter];
  return [...new Set([...variants, ...variants.flatMap(plainPath)])].filter((spelling) => spelling !== uri);
}

/**
 * A spelling with its path as a file system reads it and its host in lower case: runs of `/` as one
 * and no `/` at the end (`/srv//secret.txt`, `//srv/secret.txt`, `/srv/secret.txt/` are all
 * /srv/secret.txt to `fs.readFile` or `path.resolve`), and the host of a scheme the URL standard keeps
 * as written (`demo://HOST/…`), which RFC 3986 §6.2.2.1 says is case-insensitive. Empty when nothing
 * changes.
 */
function plainPath(spelling: string): string[] {
  const url = new URL(spelling);
  const before = url.href;
  const path = url.pathname.replace(/\/{2,}/g, "/");
  url.pathname = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
  if (url.host !== url.host.toLowerCase()) url.host = url.host.toLowerCase();
  return url.href === before ? [] : [url.href];
}

/**
 * A resource no policy names: a forbid that matches it too forbids "anything but" (`forbid … unless
 * { resource == … }`), not this resource in particular.
 */
const UNNAMED_RESOURCE = `mcpmgr-unnamed-resource:${randomUUID()}`;

/**
 * A resource decided under every spelling a server may read its URI as (`resourceSpellings`): a
 * forbid on any of them denies, or `DEMO://…/secret.md`, `…/./secret.md` would read what a forbid on
 * `demo://…/secret.md` refused. A permit counts only on the URI as sent: another spelling may be
 * another resource to a server that does not normalise. A forbid that matches any resource but
 * the ones it excepts counts only on the URI as sent too: it did not match that URI, so the URI
 * is one of its exceptions, and another spelling of it is no other resource (an allow-list
 * naming `file:///My Notes.md` must not refuse it for its normal spelling `file:///My%20Notes.md`).
 * Exceptions name resources exactly (`==`, `in` an entity's parents: a resource has no string
 * attribute a `like` could match), so the URI as sent is one the policy's author named.
 */
export function decideResourceSpellings(decide: Decide): Decide {
  return (req, action, type, id, call) => {
    const decision = decide(req, action, type, id, call);
    if (type !== cedarRules.resource.type || !decision.allowed) return decision;
    for (const spelling of resourceSpellings(id)) {
      const other = decide(req, action, type, spelling, call);
      if (other.allowed || !other.forbidden) continue;
      if (other.forbiddenBy !== undefined) {
        // Only those that match a resource nobody names are "anything but" forbids; a denial that could
        // not be evaluated in full (no forbiddenBy, either side) counts, failing closed.
        const anyResource = decide(req, action, type, UNNAMED_RESOURCE, call).forbiddenBy ?? [];
        if (other.forbiddenBy.every((policy) => anyResource.includes(policy))) continue;
      }
      return { ...other, reason: `${other.reason ?? "forbidden"} (as ${type}::${JSON.stringify(spelling)})` };
    }
    return decision;
  };
}

/**
 * Whether the caller of `req` may call a tool, as list filtering decides it (no arguments): what a
 * search-mode gateway's find_tool shows that caller. Loads its own copy of the policies.
 */
export function toolVisibility(config: AuthzConfig, aliases?: AliasesOf): (req: Request, tool: string) => boolean {
  const decide = decideNamed(cedarDecider(config).decide, aliases);
  return (req, tool) => decide(req, cedarRules.tool.action, cedarRules.tool.type, tool).allowed;
}
