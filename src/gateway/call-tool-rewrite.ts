/**
 * Search mode's call_tool, before every policy: `tools/call call_tool {name: T, arguments: A}` becomes
 * `tools/call T` with arguments A, under the same id and with the rest of its params (`_meta` with a
 * progress token, a 2026-07-28 retry's `inputResponses` and `requestState`). Telemetry, audit, the tool
 * filter and Cedar then see, decide on and record the real tool and arguments, exactly as for a direct
 * call, and the gateway routes it as one (progress, cancellation, server→client requests, errors); the
 * answer reaches the client under its own request id, as call_tool's answer.
 *
 * Only a well-formed call of a tool find_tool can return is rewritten; anything else stays a call_tool
 * for the gateway to answer (an unknown name gets the closest names). Which requests were rewritten,
 * and under which name the caller wrote the tool, is kept with the request (GatewaySearch.calls): the
 * gateway checks their arguments against the inputSchema after the policies and words its errors with
 * that name. The body is parsed once for the chain (middleware/rpc-body.ts) and rewritten once.
 */
import type { Middleware } from "../proxy/handler.ts";
import type { JsonRpcId } from "../proxy/jsonrpc.ts";
import type { JsonRpcMessage } from "../proxy/mcp-message.ts";
import { forwardWith, readRpcBody, rewrittenBody } from "../middleware/rpc-body.ts";
import type { CallToolCalls } from "./search.ts";
import { CALL_TOOL } from "./tool-search/search-tools.ts";
import { isObject } from "../objects.ts";

/** The params of the direct call a call_tool request stands for, or undefined to leave it as it is. */
function directParams(
  message: JsonRpcMessage,
  isTool: (name: string) => boolean,
): { name: string; params: Record<string, unknown> } | undefined {
  if (message.method !== "tools/call" || message.id === undefined || message.id === null) return undefined;
  const params = message.params;
  if (!isObject(params) || params.name !== CALL_TOOL || !isObject(params.arguments)) return undefined;
  const { name, arguments: args } = params.arguments;
  if (typeof name !== "string" || !isTool(name) || (args !== undefined && !isObject(args))) return undefined;
  const { name: _callTool, arguments: _wrapped, ...rest } = params;
  return { name, params: { ...rest, name, ...(args !== undefined ? { arguments: args } : {}) } };
}

export function callToolRewrite(isTool: (name: string) => boolean, calls: CallToolCalls): Middleware {
  return (next) => async (req, ctx) => {
    const body = await readRpcBody(req);
    if (body === undefined) return next(req, ctx);
    // The body is read now: what goes on carries it (parsed, for the policies after this).
    const unchanged = () => next(forwardWith(req, body), ctx);
    // Most requests never name call_tool: one substring test and they go on untouched.
    if (!body.text.includes(CALL_TOOL)) return unchanged();
    const method = req.headers.get("mcp-method");
    const nameHeader = req.headers.get("mcp-name");
    if (method !== null || nameHeader !== null) {
      // 2026-07-28 routing headers must agree with the body; when they do not, the rewrite steps
      // aside and the policies' check (or the SDK's) refuses the request as it would any other.
      const agrees =
        !Array.isArray(body.value) &&
        (method === null || method === "tools/call") &&
        (nameHeader === null || nameHeader === CALL_TOOL);
      if (!agrees) return unchanged();
    }
    const rewritten = new Map<JsonRpcId, string>();
    const rewrite = (entry: unknown) => {
      const message = entry as JsonRpcMessage;
      const direct = isObject(entry) ? directParams(message, isTool) : undefined;
      if (direct === undefined) return entry;
      rewritten.set(message.id as JsonRpcId, direct.name);
      return { ...message, params: direct.params };
    };
    // A batch keeps every entry, even those that are not messages: the server answers them as before.
    const value = Array.isArray(body.value) ? body.value.map(rewrite) : rewrite(body.value);
    if (rewritten.size === 0) return unchanged();
    const headers = new Headers(req.headers);
    headers.delete("content-length");
    if (nameHeader !== null) headers.set("mcp-name", [...rewritten.values()][0] as string);
    const forward = forwardWith(req, rewrittenBody(value), headers);
    calls.set(forward, rewritten);
    return next(forward, ctx);
  };
}

/**
 * The call_tool a rewritten call stood for, or undefined for a call that was not rewritten: what Cedar
 * forwards instead of a call it refuses for a tool the caller may not see, so the gateway answers it
 * exactly as a call_tool of a name that does not exist (middleware/authz.ts `hiddenAsUnknown`).
 */
export function callToolOf(
  calls: CallToolCalls,
): (req: Request, message: JsonRpcMessage) => JsonRpcMessage | undefined {
  return (req, message) => {
    if (message.method !== "tools/call" || message.id === undefined || message.id === null) return undefined;
    const written = calls.get(req)?.get(message.id);
    if (written === undefined || !isObject(message.params)) return undefined;
    const { name: _name, arguments: args, ...rest } = message.params;
    return {
      ...message,
      params: {
        ...rest,
        name: CALL_TOOL,
        arguments: { name: written, ...(args !== undefined ? { arguments: args } : {}) },
      },
    };
  };
}
