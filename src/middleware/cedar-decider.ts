/**
 * Cedar decisions (`--authz-config`), entity model per docs/file-formats.md: principal
 * `Client::"<sub>"` (the authenticated subject, or `Client::"local"` without authentication),
 * actions `Action::"call_tool" | "get_prompt" | "read_resource"`, resources `Tool::"name"`,
 * `Prompt::"name"`, `Resource::"uri"`, the context built by cedar-request-context.ts. The engine
 * runs in the user's one Cedar evaluator (cedar-evaluator.ts, reached through cedar-client.ts), never
 * in this process; the same question gets the remembered answer here, synchronously, without asking
 * it. A question not remembered is answered asynchronously (`Decision | Promise<Decision>`). A call is
 * denied when its context cannot be built exactly and when a forbid policy cannot be evaluated on it
 * (Cedar would skip it): the policies fail closed, and so does an evaluator that cannot be asked.
 * Under several names (a gateway's renamed tools) a decision is taken on every spelling (`decideNamed`).
 */
import { randomUUID } from "node:crypto";
import type { AuthzConfig } from "../config/authz-config.ts";
import type { McpTarget } from "../proxy/mcp-message.ts";
import { principalOf } from "./caller.ts";
import { Unmappable } from "./cedar-context.ts";
import { openPolicySet, type PolicySetClient, type TransientDenial } from "./cedar-client.ts";
import { readsArguments } from "./cedar-policies.ts";
import { readScopes, requestContext } from "./cedar-request-context.ts";
import type { Decision } from "./cedar-wire.ts";

export type { Decision } from "./cedar-wire.ts";

/** The Cedar action and resource type for each kind of target. */
export const cedarRules: Readonly<Record<McpTarget["kind"], { action: string; type: string }>> = {
  tool: { action: "call_tool", type: "Tool" },
  prompt: { action: "get_prompt", type: "Prompt" },
  resource: { action: "read_resource", type: "Resource" },
};

/** A decision remembered, or the one the evaluator is asked for. */
export type Maybe<T> = T | Promise<T>;

/** `call`: a call decided with its arguments, where a forbid policy that cannot be evaluated denies. */
export type Decide = (
  req: Request,
  action: string,
  type: string,
  id: string,
  call?: { args: unknown },
) => Maybe<Decision>;

/** `then` at once on a value, after it on a promise: a remembered decision stays synchronous. */
export function settle<T, U>(value: Maybe<T>, then: (value: T) => Maybe<U>): Maybe<U> {
  return value instanceof Promise ? value.then(then) : then(value);
}

/** All of them: synchronously when every one is known, else one promise (their questions go in one frame). */
export function settleAll<T>(values: readonly Maybe<T>[]): Maybe<T[]> {
  return values.some((value) => value instanceof Promise) ? Promise.all(values) : (values as T[]);
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

export type AliasesOf = (kind: "tool" | "prompt", name: string) => NameAliases | undefined;

/** Whether the policies read the call's arguments (then the message checks cover their keys too). */
export function inspectsArguments(policySet: PolicySetClient): boolean {
  return readsArguments(policySet.reads.reads);
}

/** The Cedar decision for a request's principal, asked of the evaluator once and remembered. */
export function cedarDecider(policySet: PolicySetClient): { decide: Decide; argsMatter: boolean } {
  // The same question gets the same answer (policies and entities are fixed): remember the
  // last few thousand, which covers list filtering and repeated calls.
  const decisions = new Map<string, Decision>();
  // Questions on their way to the evaluator: asked again meanwhile, they wait for the same answer.
  const asked = new Map<string, Promise<Decision>>();
  // Only what the policies that may apply to a resource read goes into its context
  // (cedar-request-context.ts), so a call's decision can be remembered whatever its other arguments.
  const argsMatter = readsArguments(policySet.reads.reads);
  const scopeOf = readScopes(policySet.reads);

  const decide: Decide = (req, action, type, id, call) => {
    const principal = principalOf(req);
    const subject = principal?.subject ?? "local";
    const context = requestContext(scopeOf(type, id), principal?.claims, call?.args);
    if (context instanceof Unmappable)
      return { allowed: false, reason: context.why, unmappable: true, forbidden: true };
    // Calls whose arguments are read are not remembered: their keys could be as large as the body.
    const cacheable = !argsMatter || call === undefined || Object.keys(context).every((k) => !k.startsWith("arg_"));
    const request = { subject, action, type, id, context, strict: call !== undefined };
    if (!cacheable) return policySet.decide(request);
    const key = `${call ? "call" : "list"}\u0000${subject}\u0000${action}\u0000${type}\u0000${id}\u0000${JSON.stringify(context)}`;
    const remembered = decisions.get(key) ?? asked.get(key);
    if (remembered !== undefined) return remembered;
    const answer = policySet.decide(request).then((decision) => {
      asked.delete(key);
      // A denial because the evaluator could not be asked is not the policies' answer.
      if ((decision as Partial<TransientDenial>).transient) return decision;
      decisions.set(key, decision);
      if (decisions.size > 5_000) decisions.delete(decisions.keys().next().value as string);
      return decision;
    });
    asked.set(key, answer);
    return answer;
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
    const spellings = [...new Set([id, ...names.permit, ...names.forbid])];
    return settle(settleAll(spellings.map((name) => decide(req, action, type, name, call))), (decisions) => {
      let permitted: Decision | undefined;
      let refused: Decision | undefined;
      for (const [i, name] of spellings.entries()) {
        const decision = decisions[i] as Decision;
        if (!decision.allowed && decision.forbidden && (name === id || names.forbid.includes(name)))
          return decision.reason && name !== id
            ? { ...decision, reason: `${decision.reason} (as ${type}::${JSON.stringify(name)})` }
            : decision;
        if (decision.allowed && (name === id || names.permit.includes(name))) permitted ??= decision;
        else if (name === id) refused = decision;
      }
      return permitted ?? refused ?? { allowed: false, reason: "no policy permits it" };
    });
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
  return (req, action, type, id, call) =>
    settle(decide(req, action, type, id, call), (decision) => {
      if (type !== cedarRules.resource.type || !decision.allowed) return decision;
      const spellings = resourceSpellings(id);
      if (spellings.length === 0) return decision;
      // Asked together (one round trip): every spelling, and a resource nobody names.
      const asked = [...spellings, UNNAMED_RESOURCE].map((spelling) => decide(req, action, type, spelling, call));
      return settle(settleAll(asked), (others) => {
        // Only those that match a resource nobody names are "anything but" forbids.
        const anyResource = (others[spellings.length] as Decision).forbiddenBy ?? [];
        for (const [i, spelling] of spellings.entries()) {
          const other = others[i] as Decision;
          if (other.allowed || !other.forbidden) continue;
          // A denial that could not be evaluated in full (no forbiddenBy, either side) counts, failing closed.
          if (other.forbiddenBy?.every((policy) => anyResource.includes(policy))) continue;
          return { ...other, reason: `${other.reason ?? "forbidden"} (as ${type}::${JSON.stringify(spelling)})` };
        }
        return decision;
      });
    });
}

/**
 * Whether the caller of `req` may call a tool, as list filtering decides it (no arguments): what a
 * search-mode gateway's find_tool shows that caller. On the same policy set as the middleware's.
 */
export async function toolVisibility(
  config: AuthzConfig,
  aliases?: AliasesOf,
  log?: (text: string) => void,
): Promise<(req: Request, tool: string) => Maybe<boolean>> {
  const decide = decideNamed(cedarDecider(await openPolicySet(config, log ? { log } : {})).decide, aliases);
  return (req, tool) =>
    settle(decide(req, cedarRules.tool.action, cedarRules.tool.type, tool), (decision) => decision.allowed);
}
