/**
 * Authorization with Cedar (`--authz-config`) on the wire: each request's messages decided
 * (cedar-decider.ts) before it goes on, and lists filtered by the same policies on the way back.
 * Methods that touch nothing (initialize, ping, notifications, lists) pass; any other method is
 * denied unless it is one of the three actions (default deny). A refusal is `403` / `-32001
 * Forbidden`, with the reason in the audit line; the client learns the reason only when it lies in
 * its own request (a value Cedar cannot hold exactly). Behind a gateway, a tool the caller may not
 * see at all is answered as an unknown one (`hiddenAsUnknown`). The policies are loaded into the
 * user's Cedar evaluator (cedar-client.ts): by the policy chain before the endpoint serves (so a
 * start fails on policies the evaluator refuses), else on the first request.
 */
import type { AuthzConfig } from "../config/authz-config.ts";
import type { Middleware } from "../proxy/handler.ts";
import { JsonRpcCode, jsonRpcError } from "../proxy/jsonrpc.ts";
import { targetOf, type JsonRpcMessage, type McpTarget } from "../proxy/mcp-message.ts";
import { openPolicySet, type PolicySetClient } from "./cedar-client.ts";
import {
  type AliasesOf,
  cedarDecider,
  cedarRules,
  type Decide,
  type Decision,
  decideNamed,
  decideResourceSpellings,
  type Maybe,
  settle,
  settleAll,
} from "./cedar-decider.ts";
import { markDenied } from "./denials.ts";
import { privateToCaller, requestIdsIn, rewriteResults } from "./result-rewriter.ts";
import { defaultMaxMessageBytes } from "../proxy/answer-limit.ts";
import { checkedBody, forwardWith, readRpcBody, rewrittenBody } from "./rpc-body.ts";

// The policy chain opens the policy set and asks this before it builds the middleware, from the module it loads for Cedar.
export { openPolicySet } from "./cedar-client.ts";
export { inspectsArguments } from "./cedar-decider.ts";

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
/** List results, and the field naming each listed item. */
const listed: readonly { field: string; kind: McpTarget["kind"]; key: "name" | "uri" }[] = [
  { field: "tools", kind: "tool", key: "name" },
  { field: "prompts", kind: "prompt", key: "name" },
  { field: "resources", kind: "resource", key: "uri" },
];

/** What an endpoint adds to the Cedar middleware (the gateway; `run` and `proxy` give none of it). */
export interface AuthzEndpoint {
  /** The endpoint's own tools (search mode's find_tool and call_tool), decided on by what they reach. */
  readonly own?: ReadonlySet<string>;
  readonly aliases?: AliasesOf | undefined;
  /** The largest answer held to filter it (MCPMGR_MAX_MESSAGE_BYTES; default 64 MiB). */
  readonly maxAnswerBytes?: number;
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

export function cedarAuthorization(config: AuthzConfig, endpoint: AuthzEndpoint = {}): Middleware {
  const own = endpoint.own ?? new Set<string>();
  let argsMatter = false;
  let decide: Decide | undefined;
  const ready = (policySet: PolicySetClient) => {
    const decider = cedarDecider(policySet);
    argsMatter = decider.argsMatter;
    decide = decideNamed(decideResourceSpellings(decider.decide), endpoint.aliases);
  };
  return (next) => async (req, ctx) => {
    if (decide === undefined) {
      try {
        ready(await openPolicySet(config));
      } catch (err) {
        // Not loaded (the evaluator refused them or could not be reached): nothing passes. The next request tries again.
        const reason = `Cedar: the policies could not be loaded (${err instanceof Error ? err.message : String(err)})`;
        return markDenied(jsonRpcError(403, -32001, "Forbidden: the authorization policies are not available"), {
          reason,
        });
      }
    }
    const raw = await readRpcBody(req);
    let forward = req;
    let readsResource = false;
    if (raw !== undefined) {
      const body = checkedBody(req, raw, { arguments: argsMatter });
      if (body instanceof Response) return markDenied(body);
      readsResource = body.messages.some((message) => message?.method === "resources/read");
      const refusal = await refuse(req, body.messages);
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
    const limit = { maxBytes: endpoint.maxAnswerBytes ?? defaultMaxMessageBytes, requestIds: () => requestIdsIn(raw) };
    if (readsResource)
      return rewriteResults(
        await next(forward, ctx),
        (message) => settle(filterLists(req, message), privateRead),
        (data) => /"(tools|prompts|resources|contents)"/.test(data),
        limit,
      );
    return rewriteResults(
      await next(forward, ctx),
      (message) => filterLists(req, message),
      (data) => /"(tools|prompts|resources)"/.test(data),
      limit,
    );
  };

  /**
   * A resource read Cedar allowed this caller is the caller's alone (another may be refused it): a
   * 2026-07-28 answer is marked private, so no shared cache hands it to a caller the policies refuse.
   */
  function privateRead(message: JsonRpcMessage): JsonRpcMessage {
    const result = message.result as Record<string, unknown> | undefined;
    if (typeof result !== "object" || result === null || !Array.isArray(result.contents)) return message;
    const marked = privateToCaller(result);
    return marked === result ? message : { ...message, result: marked };
  }

  async function refuse(
    req: Request,
    messages: readonly JsonRpcMessage[],
  ): Promise<Response | { message: JsonRpcMessage; reason: string } | undefined> {
    const decided = decide as Decide;
    for (const message of messages) {
      // Responses pass; a request sent without an id (as a notification) is decided all the same.
      if (typeof message !== "object" || message === null || typeof message.method !== "string") continue;
      if (passThrough.has(message.method) || message.method.startsWith("notifications/")) continue;
      const target = targetOf(message);
      if (target?.kind === "tool" && own.has(target.name)) continue;
      const rule = target ? cedarRules[target.kind] : undefined;
      const decision: Decision =
        target !== undefined && rule !== undefined
          ? await decided(req, rule.action, rule.type, target.name, { args: message.params?.arguments })
          : { allowed: false, reason: `${message.method} is not an action Cedar policies decide on` };
      if (!decision.allowed) {
        const reason = `Cedar: ${decision.reason ?? "denied"}`;
        const hidden =
          endpoint.hiddenAsUnknown !== undefined &&
          target?.kind === "tool" &&
          rule !== undefined &&
          !(await decided(req, rule.action, rule.type, target.name)).allowed;
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

  /**
   * Lists show only what the same policies would allow, decided without arguments: the items not
   * remembered are asked of the evaluator together.
   */
  function filterLists(req: Request, message: JsonRpcMessage): Maybe<JsonRpcMessage> {
    const result = message.result as Record<string, unknown> | undefined;
    if (typeof result !== "object" || result === null) return message;
    for (const rule of listed) {
      const items = result[rule.field];
      if (!Array.isArray(items)) continue;
      const { action, type } = cedarRules[rule.kind];
      const shown = items.map((item): Maybe<boolean> => {
        const key = (item as Record<string, unknown>)?.[rule.key];
        if (typeof key !== "string") return false;
        if (rule.kind === "tool" && own.has(key)) return true;
        return settle((decide as Decide)(req, action, type, key), (decision) => decision.allowed);
      });
      return settle(settleAll(shown), (verdicts) => {
        const visible = items.filter((_, i) => verdicts[i]);
        return { ...message, result: privateToCaller({ ...result, [rule.field]: visible }) };
      });
    }
    return message;
  }
}
