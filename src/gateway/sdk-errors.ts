/**
 * The MCP SDK's refusals, made into the JSON-RPC code that applies and one line a client can show.
 * The SDK answers a request whose params its schema refuses with -32603 (or, for tools/call, -32602)
 * and the schema library's whole issue list as the message, and a body that parsed but is no
 * JSON-RPC message it takes with -32700: JSON-RPC 2.0 says -32602 for invalid params and -32600 for
 * an invalid request, and a client should get one line, not a dump.
 */
import {
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResponse,
  ProtocolError,
  ProtocolErrorCode,
  Server,
} from "@modelcontextprotocol/server";
import type { JSONRPCRequest, Result, ServerContext } from "@modelcontextprotocol/server";
import { isObject } from "../objects.ts";

interface Issue {
  readonly path: readonly (string | number)[];
  readonly message: string;
}

const isIssue = (value: unknown): value is Issue =>
  isObject(value) && Array.isArray(value.path) && typeof value.message === "string";

/** The issue list a schema failure's message holds (the SDK passes its text on), else undefined. */
function issuesIn(text: string): readonly Issue[] | undefined {
  if (!text.startsWith("[")) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) && value.length > 0 && value.every(isIssue) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** At most this many issues are named: the first ones say what to fix. */
const NAMED_ISSUES = 3;

function oneLine(issues: readonly Issue[]): string {
  const named = issues
    .slice(0, NAMED_ISSUES)
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message));
  const more = issues.length > NAMED_ISSUES ? ` (and ${issues.length - NAMED_ISSUES} more)` : "";
  return `${named.join("; ")}${more}`.replaceAll(/\s+/g, " ");
}

const toolsCallRequest = "Invalid tools/call request: ";

/**
 * `err` as the gateway answers it: a schema failure of the request's params as -32602 with one line
 * (the SDK throws it uncoded for every method but tools/call); anything else as it is.
 */
export function plainSdkError(method: string, err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const text =
    err instanceof ProtocolError
      ? err.code === ProtocolErrorCode.InvalidParams && err.message.startsWith(toolsCallRequest)
        ? err.message.slice(toolsCallRequest.length)
        : undefined
      : err.message;
  const issues = text === undefined ? undefined : issuesIn(text);
  if (issues === undefined) return err;
  return new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid params for ${method}: ${oneLine(issues)}`);
}

/** The SDK's `Server` with its refusals of params made plain (`plainSdkError`), through its hook for subclasses. */
export class PlainErrorServer extends Server {
  protected override _wrapHandler(method: string, handler: WrappedHandler): WrappedHandler {
    const wrapped = super._wrapHandler(method, handler);
    return async (request, ctx) => {
      try {
        return await wrapped(request, ctx);
      } catch (err) {
        throw plainSdkError(method, err);
      }
    };
  }
}

type WrappedHandler = (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>;

/**
 * Why a parsed message is not one the SDK takes (it would answer -32700, a parse error, for JSON that
 * parsed), or undefined when it is: `params` that is not an object, a member JSON-RPC does not have, a
 * malformed `_meta` or error object.
 */
export function sdkMessageRefusal(message: unknown): string | undefined {
  // Not the id: one beyond 2^53 or fractional is mcpmgr's to serve (the relayed lanes answer it with every
  // digit, as the stdio bridge does), and kindOf has already judged it.
  const probe = isObject(message) && typeof message.id === "number" ? { ...message, id: 0 } : message;
  if (isJSONRPCRequest(probe) || isJSONRPCNotification(probe) || isJSONRPCResponse(probe)) return undefined;
  if (!isObject(message)) return "not a JSON-RPC 2.0 message";
  if ("params" in message && !isObject(message.params)) return "params must be an object";
  const known = new Set(["jsonrpc", "id", "method", "params", "result", "error"]);
  const extra = Object.keys(message).find((key) => !known.has(key));
  if (extra !== undefined) return `a JSON-RPC message has no member ${JSON.stringify(extra)}`;
  if ("params" in message && isObject(message.params) && "_meta" in message.params)
    return "params._meta must be an object with a string or integer progressToken";
  return "not a JSON-RPC 2.0 message MCP accepts";
}

/** The refusal of the first message of a body (one message or a batch) that the SDK would not take, if any. */
export function firstRefusal(body: unknown): string | undefined {
  for (const message of Array.isArray(body) ? body : [body]) {
    const refusal = sdkMessageRefusal(message);
    if (refusal !== undefined) return refusal;
  }
  return undefined;
}
