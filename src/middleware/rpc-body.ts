/**
 * A POSTed JSON-RPC body, read and parsed once for the whole chain: each middleware that
 * needs it asks here, and the Request it hands on carries the same parsed body (or the
 * one it rewrote). Without this, every policy would read and parse the body again.
 */
import { carryRequestState } from "../auth/request-state.ts";
import { JsonRpcCode, jsonRpcError, type JsonRpcId } from "../proxy/jsonrpc.ts";
import { targetOf, type JsonRpcMessage } from "../proxy/mcp-message.ts";
import { decodeHeaderValue, HEADER_MISMATCH } from "../proxy/tool-headers.ts";
import { maxJsonDepth, mayHoldLongIntegers, nestsDeeperThan, parseExactJson } from "../proxy/stdio-bridge/json-text.ts";
import { markDenied } from "./denials.ts";
import { argumentsProblem, bodyProblem, unreadableValue, type MessageCheckOptions } from "./message-checks.ts";
import { duplicateKeyIn } from "./strict-json.ts";

export interface RpcBody {
  readonly text: string;
  /** The bytes as received, forwarded unchanged unless a policy rewrote the body. */
  readonly bytes?: Uint8Array;
  /** The parsed JSON, or undefined when the body is not JSON. */
  readonly value: unknown;
  /** The objects of a single message or a batch (empty when not JSON), as the client sent them: unchecked. */
  readonly messages: readonly JsonRpcMessage[];
  /** Nested deeper than any MCP message (refused unparsed: deep values overflow the stack later). */
  readonly tooDeep?: boolean;
}

/** The refusal of a body that nests deeper than any MCP message. */
export const tooDeepMessage = `Invalid Request: JSON nested deeper than ${maxJsonDepth} levels`;

const bodies = new WeakMap<Request, RpcBody>();

export function rpcBodyOf(text: string, value?: unknown, bytes?: Uint8Array): RpcBody {
  let parsed = value;
  const tooDeep = value === undefined && nestsDeeperThan(text, maxJsonDepth);
  if (parsed === undefined && !tooDeep) {
    try {
      // Integers beyond 2^53 keep their exact digits, so a body re-serialised after a policy
      // checked it carries the same ids and arguments the client sent.
      parsed = parseExactJson(text);
    } catch {
      parsed = undefined;
    }
  }
  const list = parsed === undefined ? [] : Array.isArray(parsed) ? parsed : [parsed];
  return {
    text,
    ...(bytes ? { bytes } : {}),
    value: parsed,
    messages: list.filter((m): m is JsonRpcMessage => typeof m === "object" && m !== null),
    ...(tooDeep ? { tooDeep } : {}),
  };
}

/**
 * The parsed body as any other JSON reader would have parsed it, for a library that takes a parsed
 * body instead of reading it again; undefined when it is not JSON or holds integers kept as raw JSON.
 */
export function plainValue(body: RpcBody): unknown {
  return mayHoldLongIntegers(body.text) ? undefined : body.value;
}

/**
 * The body of a POST, whatever its Content-Type claims: the bridge parses any body, so a
 * policy that only looked at "application/json" could be walked around (undefined for
 * other methods, which keep their body stream).
 */
export async function readRpcBody(req: Request): Promise<RpcBody | undefined> {
  if (req.method !== "POST") return undefined;
  const known = bodies.get(req);
  if (known) return known;
  const bytes = new Uint8Array(await req.arrayBuffer());
  const body = rpcBodyOf(new TextDecoder().decode(bytes), undefined, bytes);
  bodies.set(req, body);
  return body;
}

/** The request to hand on, with this body (already consumed from `req`) and maybe new headers. */
export function forwardWith(req: Request, body: RpcBody, headers?: Headers): Request {
  // A request that already carries this body, unread (a later policy that changed nothing),
  // goes on as it is: building a Request is the costliest step of a policy.
  if (headers === undefined && !req.bodyUsed && bodies.get(req) === body) return req;
  const next = new Request(req, { body: body.bytes ?? body.text, ...(headers ? { headers } : {}) });
  bodies.set(next, body);
  return carryRequestState(req, next);
}

/** A body a policy rewrote: serialised from the value it checked, so already in checked form. */
export function rewrittenBody(value: unknown): RpcBody {
  const body = rpcBodyOf(JSON.stringify(value), value);
  checked.set(body, false);
  return body;
}

/**
 * Bodies already in their checked form (the next policy need not check or serialise them
 * again), and whether the keys of their tool arguments were checked too.
 */
const checked = new WeakMap<RpcBody, boolean>();

/** A refusal of the whole body, with its reason for audit (which records every message in it as refused). */
function refuse(status: number, code: number, message: string, id: JsonRpcId = null): Response {
  return markDenied(jsonRpcError(status, code, message, { id }), { reason: message, invalid: true });
}

/**
 * For policies: the body exactly as they checked it, the one reading of it that every policy
 * and audit share. A body they cannot parse is refused (a more lenient parser upstream must
 * not see what the policy could not), and so is one the server could read differently
 * (message-checks.ts: duplicate keys, keys that differ from a protocol key only by case,
 * lone surrogates, messages that are neither requests nor responses). What is sent on is the
 * re-serialised value (integers beyond 2^53 keep their digits, see exactIntegers). The
 * 2026-07-28 routing headers must agree with it (headerMismatch). Checked and serialised at
 * most once per request, however many policies ask; `options.arguments` when the caller
 * inspects tool arguments.
 */
export function checkedBody(
  req: Request,
  body: RpcBody,
  options: MessageCheckOptions = { arguments: false },
): RpcBody | Response {
  const level = checked.get(body);
  if (level !== undefined) {
    if (level || !options.arguments) return body;
    const problem = argumentsProblem(body.messages);
    if (problem) return refuse(400, problem.code, problem.message, problem.id);
    checked.set(body, true);
    return body;
  }
  if (body.tooDeep) return refuse(400, JsonRpcCode.invalidRequest, tooDeepMessage);
  if (body.value === undefined) return refuse(400, JsonRpcCode.parseError, "Parse error: the request body is not JSON");
  const text = JSON.stringify(body.value);
  // Most bodies are already in canonical form (as JSON.stringify writes them): those cannot
  // hold a duplicate key, and hold a lone surrogate only as an escape JSON.stringify writes.
  const canonical = text === body.text;
  if (!canonical) {
    const duplicate = duplicateKeyIn(body.text);
    if (duplicate !== undefined)
      return refuse(
        400,
        JsonRpcCode.invalidRequest,
        `Invalid Request: the key ${JSON.stringify(duplicate)} appears twice`,
      );
  }
  const unreadable = canonical && !body.text.includes("\\ud") ? undefined : unreadableValue(body.value);
  if (unreadable) return refuse(400, JsonRpcCode.invalidRequest, `Invalid Request: ${unreadable}`);
  const problem = bodyProblem(body.value, body.messages, options);
  if (problem) return refuse(400, problem.code, problem.message, problem.id);
  const mismatch = headerMismatch(req, body);
  if (mismatch) return mismatch;
  const result: RpcBody = canonical ? body : { text, value: body.value, messages: body.messages };
  checked.set(result, options.arguments);
  return result;
}

/**
 * 2026-07-28 requests mirror the body in `Mcp-Method` and `Mcp-Name` headers, and a server
 * (or a gateway in front of it) may route by them; so what the policies decided on (the
 * body) and the headers must agree. A 400 answer when they do not (with the revision's
 * HeaderMismatch code, so that a client does not take it for a 2025-era server's refusal and
 * fall back), else undefined. `Mcp-Name` is compared as the client meant it: a name or URI
 * outside plain ASCII travels in the `=?base64?…?=` form, decoded here first.
 */
function headerMismatch(req: Request, body: RpcBody): Response | undefined {
  const method = req.headers.get("mcp-method");
  const name = req.headers.get("mcp-name");
  if (method === null && name === null) return undefined;
  const refuseWith = (why: string, id: unknown = null, code: number = HEADER_MISMATCH) =>
    refuse(400, code, why, (id ?? null) as JsonRpcId);
  if (Array.isArray(body.value) || body.messages.length !== 1)
    return refuseWith(
      "Mcp-Method and Mcp-Name go with a single request, not a batch",
      null,
      JsonRpcCode.invalidRequest,
    );
  const message = body.messages[0] as JsonRpcMessage;
  if (method !== null && method !== message.method)
    return refuseWith("Mcp-Method does not match the method in the request body", message.id);
  if (name === null) return undefined;
  const named = decodeHeaderValue(name);
  if (named === undefined || targetOf(message)?.name !== named)
    return refuseWith("Mcp-Name does not match the request body", message.id);
  return undefined;
}
