/**
 * Authorization with Cedar (`--authz-config`), evaluated by the Cedar engine
 * (@cedar-policy/cedar-wasm), entity model per docs/file-formats.md: principal `Client::"<sub>"` (the
 * authenticated subject, or `Client::"local"` without authentication), actions
 * `Action::"call_tool" | "get_prompt" | "read_resource"`, resources `Tool::"name"`,
 * `Prompt::"name"`, `Resource::"uri"`; the token's claims are in the context as `claim_*`
 * and the call's arguments as `arg_*`. Lists are filtered by the same policies. Methods that
 * touch nothing (initialize, ping, notifications, lists) pass; any other method is denied
 * unless it is one of the three actions (default deny).
 */
import { randomUUID } from "node:crypto";
import { preparsePolicySet, statefulIsAuthorized } from "@cedar-policy/cedar-wasm/nodejs";
import type { AuthzConfig } from "../config/authz-config.ts";
import type { Middleware } from "../proxy/handler.ts";
import { jsonRpcError } from "../proxy/jsonrpc.ts";
import { targetOf, type JsonRpcMessage, type McpTarget } from "../proxy/mcp-message.ts";
import { principalOf } from "./authn.ts";
import { markDenied } from "./denials.ts";
import { privateToCaller, rewriteResults } from "./result-rewriter.ts";
import { checkedBody, forwardWith, readRpcBody } from "./rpc-body.ts";

type CedarValue = string | number | boolean | CedarValue[] | { [key: string]: CedarValue };

const passThrough = new Set([
  "initialize",
  "ping",
  "tools/list",
  "prompts/list",
  "resources/list",
  "resources/templates/list",
  "logging/setLevel",
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

/** Cedar context values: strings, longs (integers), booleans, sets and records; anything else is left out. */
function cedarValue(value: unknown, depth = 0): CedarValue | undefined {
  if (typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isSafeInteger(value) ? value : undefined;
  if (depth > 5 || value === null || typeof value !== "object") return undefined;
  if (Array.isArray(value))
    return value.map((item) => cedarValue(item, depth + 1)).filter((item): item is CedarValue => item !== undefined);
  const record: Record<string, CedarValue> = {};
  for (const [key, item] of Object.entries(value)) {
    const converted = cedarValue(item, depth + 1);
    if (converted !== undefined) record[key] = converted;
  }
  return record;
}

function prefixed(prefix: string, values: Readonly<Record<string, unknown>> | undefined): Record<string, CedarValue> {
  const out: Record<string, CedarValue> = {};
  for (const [key, value] of Object.entries(values ?? {})) {
    const converted = cedarValue(value);
    if (converted !== undefined) out[`${prefix}${key}`] = converted;
  }
  return out;
}

type Decide = (
  req: Request,
  action: string,
  type: string,
  id: string,
  args?: Readonly<Record<string, unknown>>,
) => boolean;

/** The Cedar decision for a request's principal, with the policies parsed once and answers remembered. */
function cedarDecider(config: AuthzConfig): Decide {
  // Parsed once by the engine and referred to by id: parsing per request was most of the cost.
  const policySetId = `mcpmgr-${randomUUID()}`;
  const parsed = preparsePolicySet(policySetId, { staticPolicies: config.policies });
  if (parsed.type === "failure")
    throw new Error(`Cedar policies failed to parse: ${parsed.errors.map((e) => e.message).join("; ")}`);
  // The same question gets the same answer (policies and entities are fixed): remember the
  // last few thousand, which covers list filtering and repeated calls.
  const decisions = new Map<string, boolean>();
  // What a policy cannot read cannot change its answer: claims go into the context only when
  // some policy mentions the context, arguments only when one reads more of it than claims.
  // Then a call's decision can be remembered whatever its arguments.
  const claimsMatter = /\bcontext\b/.test(config.policies);
  const argsMatter = /\bcontext\b(?!\.claim_)/.test(config.policies);
  return (req, action, type, id, args) => {
    const principal = principalOf(req);
    const subject = principal?.subject ?? "local";
    const context = {
      ...(claimsMatter ? prefixed("claim_", principal?.claims) : {}),
      ...(argsMatter ? prefixed("arg_", args) : {}),
    };
    // Calls whose arguments matter are not remembered: their keys could be as large as the body.
    const cacheable = !argsMatter || args === undefined || Object.keys(args).length === 0;
    const key = cacheable ? `${subject}\u0000${action}\u0000${type}\u0000${id}\u0000${JSON.stringify(context)}` : "";
    const known = cacheable ? decisions.get(key) : undefined;
    if (known !== undefined) return known;
    const answer = statefulIsAuthorized({
      principal: { type: "Client", id: subject },
      action: { type: "Action", id: action },
      resource: { type, id },
      context,
      preparsedPolicySetId: policySetId,
      entities: config.entities as never,
    });
    const allowed = answer.type === "success" && answer.response.decision === "allow";
    if (cacheable) {
      decisions.set(key, allowed);
      if (decisions.size > 5_000) decisions.delete(decisions.keys().next().value as string);
    }
    return allowed;
  };
}

/**
 * Whether the caller of `req` may call a tool, as list filtering decides it (no arguments): what a
 * search-mode gateway's find_tool shows that caller. Loads its own copy of the policies.
 */
export function toolVisibility(config: AuthzConfig): (req: Request, tool: string) => boolean {
  const decide = cedarDecider(config);
  return (req, tool) => decide(req, cedar.tool.action, cedar.tool.type, tool);
}

/** `own`: the endpoint's own tools (search mode's find_tool and call_tool), decided on by what they reach. */
export function cedarAuthorization(config: AuthzConfig, own: ReadonlySet<string> = new Set()): Middleware {
  const decide = cedarDecider(config);
  return (next) => async (req, ctx) => {
    const raw = await readRpcBody(req);
    let forward = req;
    if (raw !== undefined) {
      const body = checkedBody(req, raw);
      if (body instanceof Response) return markDenied(body);
      const refusal = refuse(req, body.messages);
      if (refusal) return refusal;
      forward = forwardWith(req, body);
    }
    // Every answer, GET streams included (legacy SSE answers arrive there).
    return rewriteResults(
      await next(forward, ctx),
      (message) => filterLists(req, message),
      (data) => /"(tools|prompts|resources)"/.test(data),
    );
  };

  function refuse(req: Request, messages: readonly JsonRpcMessage[]): Response | undefined {
    for (const message of messages) {
      // Responses pass; a request sent without an id (as a notification) is decided all the same.
      if (typeof message !== "object" || message === null || typeof message.method !== "string") continue;
      if (passThrough.has(message.method) || message.method.startsWith("notifications/")) continue;
      const target = targetOf(message);
      if (target?.kind === "tool" && own.has(target.name)) continue;
      const rule = target ? cedar[target.kind] : undefined;
      const args = message.params?.arguments;
      const allowed =
        target !== undefined &&
        rule !== undefined &&
        decide(
          req,
          rule.action,
          rule.type,
          target.name,
          typeof args === "object" && args !== null ? (args as Record<string, unknown>) : undefined,
        );
      if (!allowed) {
        const what = target && rule ? `${rule.action} on ${rule.type}::${JSON.stringify(target.name)}` : message.method;
        return markDenied(jsonRpcError(403, -32001, `Forbidden: ${what} is not permitted`, { id: message.id ?? null }));
      }
    }
    return undefined;
  }

  /** Lists show only what the same policies would allow. */
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
        return typeof key === "string" && decide(req, action, type, key);
      });
      return { ...message, result: privateToCaller({ ...result, [rule.field]: visible }) };
    }
    return message;
  }
}
