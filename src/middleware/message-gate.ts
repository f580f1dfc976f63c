/**
 * The edge of the policies: every POSTed body is read once, checked once (rpc-body.ts,
 * message-checks.ts) and refused with -32600 (HTTP 400) when the server could read it
 * differently from how mcpmgr reads it, before any policy decides on it. Installed inside
 * audit (which records the refusal, with its reason) and authentication, and only when a
 * policy reads bodies (audit, --tools, Cedar, webhooks): without one, mcpmgr decides nothing
 * on a body, so a plain proxy pays nothing for it (docs/security.md).
 */
import type { Middleware } from "../proxy/handler.ts";
import { JsonRpcCode, jsonRpcError } from "../proxy/jsonrpc.ts";
import { markDenied } from "./denials.ts";
import type { MessageCheckOptions } from "./message-checks.ts";
import { checkedBody, forwardWith, readRpcBody } from "./rpc-body.ts";

/** Whether a request carries a body (Bun gives GET and HEAD requests a null body whatever was sent). */
function hasBody(req: Request): boolean {
  const length = req.headers.get("content-length");
  return (length !== null && length !== "0") || req.headers.has("transfer-encoding") || req.body !== null;
}

export function messageGate(options: MessageCheckOptions): Middleware {
  return (next) => async (req, ctx) => {
    // MCP messages travel in POST bodies, the only ones the policies read: a body on any other
    // method goes nowhere, or a lenient server could take a PUT for a POST nobody checked.
    if (req.method !== "POST" && hasBody(req)) {
      const reason = `Invalid Request: MCP messages are sent with POST, not with a ${req.method} body`;
      return markDenied(jsonRpcError(400, JsonRpcCode.invalidRequest, reason), { reason, invalid: true });
    }
    const raw = await readRpcBody(req);
    if (raw === undefined) return next(req, ctx);
    const body = checkedBody(req, raw, options);
    if (body instanceof Response) return body;
    return next(forwardWith(req, body), ctx);
  };
}
