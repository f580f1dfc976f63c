/**
 * A POSTed JSON-RPC body, read and parsed once for the whole chain: each middleware that
 * needs it asks here, and the Request it hands on carries the same parsed body (or the
 * one it rewrote). Without this, every policy would read and parse the body again.
 */
import { carryRequestState } from "../auth/request-state.ts";
import { JsonRpcCode, jsonRpcError } from "../proxy/jsonrpc.ts";
export interface RpcBody {
  readonly text: string;
  /** The parsed JSON, or undefined when the body is not JSON. */
  readonly value: unknown;
  /** The messages of a single message or a batch (empty when not JSON-RPC). */
  readonly messages: readonly Record<string, unknown>[];
}

const bodies = new WeakMap<Request, RpcBody>();

export function rpcBodyOf(text: string, value?: unknown): RpcBody {
  let parsed = value;
  if (parsed === undefined) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
  }
  const list = parsed === undefined ? [] : Array.isArray(parsed) ? parsed : [parsed];
  return { text, value: parsed, messages: list.filter((m): m is Record<string, unknown> => typeof m === "object" && m !== null) };
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
  const body = rpcBodyOf(await req.text());
  bodies.set(req, body);
  return body;
}

/** The request to hand on, with this body (already consumed from `req`) and maybe new headers. */
export function forwardWith(req: Request, body: RpcBody, headers?: Headers): Request {
  const next = new Request(req, { body: body.text, ...(headers ? { headers } : {}) });
  bodies.set(next, body);
  return carryRequestState(req, next);
}

/** A body a policy rewrote: serialised from the value it checked, so already in checked form. */
export function rewrittenBody(value: unknown): RpcBody {
  const body = rpcBodyOf(JSON.stringify(value), value);
  checked.add(body);
  return body;
}

/** Bodies already in their checked form: the next policy need not serialise them again. */
const checked = new WeakSet<RpcBody>();
/** An integer literal JSON.parse cannot hold exactly (past 2^53): re-serialising would change it. */
const unsafeInteger = /[:,[]\s*-?\d{16,}/;

/**
 * For policies: the body exactly as they checked it. A body they cannot parse is refused
 * (a more lenient parser upstream must not see what the policy could not), and what is sent
 * on is the re-serialised value, so duplicate keys or odd spellings cannot mean one thing to
 * the policy and another to the server. A body with integers beyond 2^53 (ids, arguments)
 * is sent as written instead: re-serialising would silently change those numbers.
 * Serialised at most once per request, however many policies ask.
 */
export function checkedBody(body: RpcBody): RpcBody | Response {
  if (checked.has(body)) return body;
  if (body.value === undefined) {
    return jsonRpcError(400, JsonRpcCode.parseError, "Parse error: the request body is not JSON");
  }
  const text = unsafeInteger.test(body.text) ? body.text : JSON.stringify(body.value);
  const result = text === body.text ? body : { ...body, text };
  checked.add(result);
  return result;
}
