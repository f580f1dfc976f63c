/**
 * A POSTed JSON-RPC body, read and parsed once for the whole chain: each middleware that
 * needs it asks here, and the Request it hands on carries the same parsed body (or the
 * one it rewrote). Without this, every policy would read and parse the body again.
 */
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

/** The body of a JSON POST (undefined for other requests, which keep their body stream). */
export async function readRpcBody(req: Request): Promise<RpcBody | undefined> {
  if (req.method !== "POST" || !(req.headers.get("content-type") ?? "").includes("json")) return undefined;
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
  return next;
}
