/**
 * Webhooks on MCP requests (`--webhook-config`): every client request or notification is
 * first sent to the mutating webhooks, which may answer an RFC 6902 JSON Patch (applied with
 * fast-json-patch, and only below /params: a webhook cannot change what is called or its id),
 * then to the validating webhooks, which allow or deny it. A webhook that fails (network,
 * timeout, bad answer) denies the request under failure_policy "fail" and is skipped under
 * "ignore". Bodies can be signed (HMAC-SHA256 over timestamp.body) so webhooks know the
 * caller. A denial is a 403 with a JSON-RPC error.
 */
import { createHmac, randomUUID } from "node:crypto";
import fastJsonPatch, { type Operation } from "fast-json-patch";
import type { WebhookConfig, WebhookSpec } from "../config/webhook-config.ts";
import type { Middleware, RequestContext } from "../proxy/handler.ts";
import { jsonRpcError } from "../proxy/jsonrpc.ts";
import { targetOf, type JsonRpcMessage as Message } from "../proxy/mcp-message.ts";
import { principalOf } from "./caller.ts";
import { followPatchedArguments } from "./patched-param-headers.ts";
import { markDenied } from "./denials.ts";
import { bodyProblem } from "./message-checks.ts";
import { checkedBody, forwardWith, readRpcBody, rewrittenBody } from "./rpc-body.ts";
import { errorMessage } from "../errors.ts";
import { isObject } from "../objects.ts";
import { excerpt } from "../printable.ts";

export interface WebhookOptions {
  readonly config: WebhookConfig;
  /** hmac_secret_ref → secret value (resolved from the secrets manager at start-up). */
  readonly hmacSecrets: ReadonlyMap<string, string>;
  readonly serverName: string;
  readonly onFailure?: (text: string) => void;
}

class WebhookFailed extends Error {}

async function call(hook: WebhookSpec, body: string, hmacSecret: string | undefined): Promise<Record<string, unknown>> {
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (hmacSecret !== undefined) {
    const timestamp = String(Math.floor(Date.now() / 1000));
    headers["x-mcpmgr-timestamp"] = timestamp;
    headers["x-mcpmgr-signature"] =
      `sha256=${createHmac("sha256", hmacSecret).update(`${timestamp}.${body}`).digest("hex")}`;
  }
  let response: Response;
  try {
    response = await fetch(hook.url, {
      method: "POST",
      headers,
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(hook.timeoutMs),
      ...(hook.tls
        ? {
            tls: {
              ...(hook.tls.ca ? { ca: hook.tls.ca } : {}),
              ...(hook.tls.cert ? { cert: hook.tls.cert, key: hook.tls.key } : {}),
              rejectUnauthorized: !hook.tls.insecureSkipVerify,
            },
          }
        : {}),
    } as RequestInit);
  } catch (err) {
    throw new WebhookFailed(
      err instanceof Error && err.name === "TimeoutError" ? `timed out after ${hook.timeoutMs} ms` : errorMessage(err),
    );
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => {});
    throw new WebhookFailed(`answered HTTP ${response.status}`);
  }
  const text = await boundedText(response);
  let answer: Record<string, unknown> | undefined;
  try {
    answer = JSON.parse(text) as Record<string, unknown> | undefined;
  } catch {
    answer = undefined;
  }
  if (typeof answer !== "object" || answer === null)
    throw new WebhookFailed("answered something that is not a JSON object");
  return answer;
}

/** A webhook's answer is a small JSON object: a larger one is a failure, not memory spent reading it. */
const maxAnswerBytes = 1024 * 1024;

async function boundedText(response: Response): Promise<string> {
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > maxAnswerBytes || response.body === null) {
    await response.body?.cancel().catch(() => {});
    if (declared > maxAnswerBytes) throw new WebhookFailed(`answered more than ${maxAnswerBytes} bytes`);
    return "";
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body) {
      size += chunk.byteLength;
      if (size > maxAnswerBytes) {
        await response.body.cancel().catch(() => {});
        throw new WebhookFailed(`answered more than ${maxAnswerBytes} bytes`);
      }
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof WebhookFailed) throw err;
    throw new WebhookFailed(`its answer broke off (${errorMessage(err)})`);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Only /params and below: the method, id and protocol of a message are not a webhook's to change. */
function patchAllowed(ops: unknown): ops is Operation[] {
  return (
    Array.isArray(ops) &&
    ops.every((op) => {
      const o = op as { path?: unknown; from?: unknown };
      const inParams = (path: unknown) =>
        typeof path === "string" && (path === "/params" || path.startsWith("/params/"));
      return inParams(o.path) && (o.from === undefined || inParams(o.from));
    })
  );
}

export function webhooks(options: WebhookOptions): Middleware {
  const { config } = options;
  const deny = (message: Message, text: string, status = 403) =>
    markDenied(jsonRpcError(status, -32001, text, { id: message.id ?? null }), { reason: text });

  const review = async (message: Message, req: Request, ctx: RequestContext): Promise<Message | Response> => {
    const principal = principalOf(req);
    const envelope = (mcpRequest: Message) =>
      JSON.stringify({
        version: "v0.1.0",
        uid: randomUUID(),
        timestamp: new Date().toISOString(),
        mcp_request: mcpRequest,
        context: { server_name: options.serverName, source_ip: ctx.remoteAddress },
        ...(principal ? { principal: { sub: principal.subject, claims: principal.claims } } : {}),
      });
    let current = message;
    /** The hook's answer about `current`; undefined when it failed and its policy ignores that, else the refusal. */
    const ask = async (
      hook: WebhookSpec,
      kind: "mutating" | "validating",
    ): Promise<Record<string, unknown> | Response | undefined> => {
      try {
        return await call(
          hook,
          envelope(current),
          hook.hmacSecretRef ? options.hmacSecrets.get(hook.hmacSecretRef) : undefined,
        );
      } catch (err) {
        options.onFailure?.(`webhook ${hook.name}: ${errorMessage(err)}`);
        return hook.failurePolicy === "ignore"
          ? undefined
          : deny(message, `request refused: ${kind} webhook ${hook.name} failed`, 502);
      }
    };
    const denied = (hook: WebhookSpec, answer: Record<string, unknown>) =>
      deny(
        message,
        `request denied by webhook ${hook.name}${typeof answer.reason === "string" ? `: ${answer.reason}` : ""}`,
      );
    for (const hook of config.mutating) {
      const answer = await ask(hook, "mutating");
      if (answer === undefined) continue;
      if (answer instanceof Response) return answer;
      if (answer.allowed === false) return denied(hook, answer);
      if (answer.patch === undefined) continue;
      if (answer.patch_type !== undefined && answer.patch_type !== "json_patch")
        return deny(
          message,
          // The answer may hold up to 1 MiB: the client and the audit line get the start of the type only.
          `webhook ${hook.name} answered the unknown patch type ${excerpt(JSON.stringify(answer.patch_type) ?? "", 60)} (mcpmgr applies "json_patch", RFC 6902)`,
          502,
        );
      if (!patchAllowed(answer.patch))
        return deny(message, `webhook ${hook.name} tried to change more than the request's params`, 502);
      try {
        const patched = fastJsonPatch.applyPatch(current, answer.patch, true, false).newDocument as Message;
        // What is called was decided by the policies before the webhooks: a patch may change the arguments, not the target.
        if (targetOf(patched)?.name !== targetOf(current)?.name)
          return deny(
            message,
            `webhook ${hook.name} tried to change the tool, prompt or resource the request targets`,
            502,
          );
        // Nor may it add a key the server would read as another ("Name" beside "name").
        const ambiguous = bodyProblem(patched, [patched], { arguments: true });
        if (ambiguous)
          return deny(
            message,
            `webhook ${hook.name} answered a patch the server could read differently: ${ambiguous.message}`,
            502,
          );
        current = patched;
      } catch (err) {
        options.onFailure?.(`webhook ${hook.name}: its patch does not apply (${errorMessage(err)})`);
        if (hook.failurePolicy === "ignore") continue;
        return deny(message, `request refused: webhook ${hook.name} answered a patch that does not apply`, 502);
      }
    }
    for (const hook of config.validating) {
      const answer = await ask(hook, "validating");
      if (answer === undefined) continue;
      if (answer instanceof Response) return answer;
      if (answer.allowed !== true) return denied(hook, answer);
    }
    return current;
  };

  return (next) => async (req, ctx) => {
    const raw = await readRpcBody(req);
    if (raw === undefined) return next(req, ctx);
    // Webhooks see all params: the keys of tool arguments are checked too.
    const body = checkedBody(req, raw, { arguments: true });
    if (body instanceof Response) return markDenied(body);
    const parsed = body.value;
    const messages = body.messages;
    const reviewed: Message[] = [];
    let changed = false;
    for (const message of messages) {
      // Client requests and notifications; answers to the server's own requests pass.
      if (typeof message !== "object" || message === null || typeof message.method !== "string") {
        reviewed.push(message);
        continue;
      }
      const outcome = await review(message, req, ctx);
      if (outcome instanceof Response) return outcome;
      if (outcome !== message) changed = true;
      reviewed.push(outcome);
    }
    if (!changed) return next(forwardWith(req, body), ctx);
    const value = Array.isArray(parsed) ? reviewed : reviewed[0];
    const headers = new Headers(req.headers);
    headers.delete("content-length");
    // A 2026-07-28 call's Mcp-Param-* headers follow the arguments a patch changed (the server checks them).
    const [before] = messages;
    if (!Array.isArray(parsed) && before !== undefined && isObject(before) && before.method === "tools/call") {
      const argsOf = (message: unknown) =>
        isObject(message) && isObject(message.params)
          ? (message.params as Record<string, unknown>).arguments
          : undefined;
      const unfollowed = followPatchedArguments(headers, argsOf(before), argsOf(value));
      if (unfollowed !== undefined) {
        const text = `request refused: a mutating webhook's patch cannot be sent: ${unfollowed}`;
        return markDenied(jsonRpcError(502, -32001, text, { id: before.id ?? null }), { reason: text });
      }
    }
    return next(forwardWith(req, rewrittenBody(value), headers), ctx);
  };
}
