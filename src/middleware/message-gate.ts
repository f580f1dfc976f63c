/**
 * The edge of the policies: every POSTed body is read once, checked once (rpc-body.ts,
 * message-checks.ts) and refused with -32600 (HTTP 400) when the server could read it
 * differently from how mcpmgr reads it, before any policy decides on it. Installed inside
 * audit (which records the refusal, with its reason) and authentication, and only when a
 * policy reads bodies (audit, --tools, Cedar, webhooks): without one, mcpmgr decides nothing
 * on a body, so a plain proxy pays nothing for it (docs/security.md).
 */
import type { Middleware } from "../proxy/handler.ts";
import type { MessageCheckOptions } from "./message-checks.ts";
import { checkedBody, forwardWith, readRpcBody } from "./rpc-body.ts";

export function messageGate(options: MessageCheckOptions): Middleware {
  return (next) => async (req, ctx) => {
    const raw = await readRpcBody(req);
    if (raw === undefined) return next(req, ctx);
    const body = checkedBody(req, raw, options);
    if (body instanceof Response) return body;
    return next(forwardWith(req, body), ctx);
  };
}
