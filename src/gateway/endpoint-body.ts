/**
 * A request's body as the gateway's endpoint (front-end.ts) takes it: read once, parsed for the SDK,
 * and refused with a JSON-RPC error where the SDK would answer wrongly (a parse error for JSON that is
 * no JSON-RPC message, a stack overflow on a body nested too deep, a batch of a revision without them).
 */
import { forwardWith, plainValue, type RpcBody, readRpcBody, tooDeepMessage } from "../middleware/rpc-body.ts";
import { JsonRpcCode, jsonRpcError } from "../proxy/jsonrpc.ts";
import { allowsBatches, kindOf } from "../proxy/stdio-bridge/messages.ts";
import { firstRefusal } from "./sdk-errors.ts";

/** A request's body checked: the body read (none for a GET), its value for the SDK, and the request to hand on. */
export interface CheckedBody {
  readonly body: RpcBody | undefined;
  readonly parsedBody: unknown;
  /** The request itself, or one that carries a body the SDK must read itself. */
  readonly request: Request;
  readonly withBody: { parsedBody: unknown } | undefined;
}

const isInvalid = (message: unknown): boolean => kindOf(message) === "invalid";

/** The body of `req` checked, or the error answer that refuses it. */
export async function checkedBody(req: Request): Promise<CheckedBody | Response> {
  // A POST's body is read here, once (the policies' reading when they ran), while the server's idle
  // timeout still holds: a client that stalls mid-body is cut off as at every other endpoint, and the
  // SDK, handed the parsed body, applies no size limit of its own below MCPMGR_MAX_REQUEST_BYTES.
  const body = await readRpcBody(req);
  // Left unparsed (rpc-body.ts): the SDK would overflow its stack on it, and blame the workload.
  if (body?.tooDeep) return jsonRpcError(400, JsonRpcCode.invalidRequest, tooDeepMessage);
  const parsedBody = body && sdkValue(body);
  // A body the SDK must read itself (not JSON: it answers the parse error) travels with the request.
  const request = body && parsedBody === undefined ? forwardWith(req, body) : req;
  const withBody = parsedBody === undefined ? undefined : { parsedBody };
  // JSON that is no JSON-RPC message is an invalid request (-32600), not a parse error as the SDK says.
  if (parsedBody !== undefined && (Array.isArray(parsedBody) ? parsedBody : [parsedBody]).some(isInvalid))
    return jsonRpcError(400, JsonRpcCode.invalidRequest, "Invalid Request: not a JSON-RPC 2.0 message");
  // The same for one the SDK's stricter reading refuses (params that are no object, an extra member).
  const refusal = parsedBody === undefined ? undefined : firstRefusal(parsedBody);
  if (refusal !== undefined) return jsonRpcError(400, JsonRpcCode.invalidRequest, `Invalid Request: ${refusal}`);
  return { body, parsedBody, request, withBody };
}

/**
 * A batch is JSON-RPC of 2025-03-26 only (a request without MCP-Protocol-Version counts as that
 * revision's), and never empty: refused as the stdio bridge refuses it, else undefined.
 */
export function batchRefusal(req: Request, size: number): Response | undefined {
  const version = req.headers.get("mcp-protocol-version");
  if (size === 0) return jsonRpcError(400, JsonRpcCode.invalidRequest, "Invalid Request: an empty batch");
  if (version === null || allowsBatches(version)) return undefined;
  return jsonRpcError(
    400,
    JsonRpcCode.invalidRequest,
    `Invalid Request: JSON-RPC batches are not allowed in protocol ${version}`,
  );
}

/**
 * The parsed body for the SDK: as any JSON reader parses it (integers beyond 2^53 rounded, as the
 * SDK would), or undefined when it is not JSON or nested too deep to parse safely.
 */
function sdkValue(body: RpcBody): unknown {
  const plain = plainValue(body);
  if (plain !== undefined || body.value === undefined) return plain;
  return JSON.parse(body.text);
}
