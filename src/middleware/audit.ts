/**
 * Audit (`--enable-audit`, `--audit-config`): one JSON line per MCP event — which request,
 * who asked (the authenticated subject, else "local"), from where, what it targeted (tool,
 * prompt, resource), how it ended (success, failure, denied, error, application_error) and
 * how long it took; request and response data only when configured, truncated and with
 * credentials redacted. It wraps the policies (authentication, tool filter), so denials are
 * recorded too. JSON answers are read once; SSE answers (and legacy SSE streams, where
 * answers to 202-accepted POSTs arrive) pass through untouched while a parser watches them
 * for the answers to the audited requests.
 */
import { Buffer } from "node:buffer";
import { randomUUID } from "node:crypto";
import { createParser } from "eventsource-parser";
import type { AuditConfig, AuditEventType } from "../config/audit-config.ts";
import { pathOf, type Middleware } from "../proxy/handler.ts";
import type { JsonRpcId } from "../proxy/jsonrpc.ts";
import { targetOf, type JsonRpcMessage } from "../proxy/mcp-message.ts";
import { principalOf } from "./caller.ts";
import { denialOf, isDenied } from "./denials.ts";
import { caseInsensitiveReading } from "./message-checks.ts";
import { foldKey } from "./strict-json.ts";
import { forwardWith, readRpcBody } from "./rpc-body.ts";
import { LegacyAnswers } from "./audit-legacy-sse.ts";
import { sessionRef } from "./session-ref.ts";
import { isLegacyStream, sseFeeder, watchBody } from "./watch-stream.ts";
import { defaultMaxMessageBytes } from "../proxy/answer-limit.ts";
import { bareUri, bareUrisIn } from "./withheld-uri.ts";

export interface AuditOptions {
  readonly config: AuditConfig;
  /** Where each event line goes (the workload log or the configured file). */
  readonly write: (line: string) => void;
  /** Removes known secret values (the server's environment secrets) from data. */
  readonly redact?: (text: string) => string;
  /**
   * Why data cannot be recorded now, if it cannot: a gateway does not know its members' secrets, so
   * while one that holds some is a member, it records no request or response data (gateway/start.ts), and
   * resource URIs, in targets and in denials' reasons, without their userinfo, query and fragment
   * (withheld-uri.ts): a member may have put its key there.
   */
  readonly withhold?: () => string | undefined;
}

const typeByMethod: Readonly<Record<string, AuditEventType>> = {
  initialize: "mcp_initialize",
  "tools/call": "mcp_tool_call",
  "tools/list": "mcp_tools_list",
  "prompts/get": "mcp_prompt_get",
  "prompts/list": "mcp_prompts_list",
  "resources/read": "mcp_resource_read",
  "resources/list": "mcp_resources_list",
  ping: "mcp_ping",
};

/** Matched on the folded key: "paſſword" is a password to a server that folds keys. */
const sensitiveKey = /authorization|token|secret|password|passwd|api[_-]?key|cookie|credential/;

function scrub(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== "object") return value;
  if (depth > 20) return "[too deep]";
  if (Array.isArray(value)) return value.map((item) => scrub(item, depth + 1));
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [
      key,
      sensitiveKey.test(foldKey(key)) ? "[redacted]" : scrub(item, depth + 1),
    ]),
  );
}

/** Names and ids a client chose are capped: a megabyte tool name must not make a megabyte line per call. */
const maxNameLength = 1024;
function capped(text: string): string {
  return text.length > maxNameLength ? `${text.slice(0, maxNameLength)}…(truncated)` : text;
}

/**
 * A name, id, path or reason as recorded: redacted, then capped (a cut first would leave a value's head
 * that lies across it). Recorded whether or not data is: a resource's URI may hold a key the server put
 * in it (`…?api_key=…`) and a client read back.
 */
type Named = (text: string) => string;

/**
 * The method and, for requests that name one, the tool, prompt or resource: {method, tool: "echo"}.
 * `namedUri`: a resource's URI as recorded (`named`, or made bare first while data is withheld).
 */
function auditTarget(message: JsonRpcMessage | undefined, named: Named, namedUri: Named): Record<string, string> {
  const target = message && targetOf(message);
  const method = typeof message?.method === "string" ? named(message.method) : "";
  return { method, ...(target ? { [target.kind]: (target.kind === "resource" ? namedUri : named)(target.name) } : {}) };
}

function requestIdOf(message: JsonRpcMessage | undefined, named: Named): { requestId?: unknown } {
  const id = message?.id;
  if (typeof id === "string") return { requestId: named(id) };
  return id === undefined || id === null || (typeof id === "object" && !jsonWithRaw.isRawJSON?.(id))
    ? {}
    : { requestId: id };
}

const jsonWithRaw = JSON as typeof JSON & { isRawJSON?(value: unknown): boolean };

/**
 * Characters JSON leaves as they are but other readers do not: DEL and the C1 controls
 * (terminals act on them), U+2028 and U+2029 (line ends to some line readers, as is U+0085).
 * Escaped, so that one event stays one line whatever a client names its tools.
 */
const lineBreakers = /[\u007f-\u009f\u2028\u2029]/g;
function oneLine(json: string): string {
  return json.replace(lineBreakers, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function outcomeOf(answer: JsonRpcMessage | undefined, response: Response): string {
  if (isDenied(response) || response.status === 401 || response.status === 403) return "denied";
  if (answer?.error)
    return answer.error.code === -32602 && /Unknown tool/.test(answer.error.message ?? "") ? "denied" : "error";
  if ((answer?.result as { isError?: unknown } | null | undefined)?.isError === true) return "application_error";
  if (answer?.result !== undefined) return "success";
  return response.status >= 400 ? "failure" : "success";
}

/**
 * `maxAnswerBytes` (MCPMGR_MAX_MESSAGE_BYTES): the largest answer audit holds to read it. Audit only
 * watches: a larger JSON answer or SSE event is passed on unchanged, and its request recorded without it.
 */
export function auditTrail(options: AuditOptions, maxAnswerBytes = defaultMaxMessageBytes): Middleware {
  const { config } = options;
  const redact = options.redact ?? ((text: string) => text);
  const named: Named = (text) => capped(redact(text));
  // Asked only of a resource target or a reason, and only where data may be withheld (a gateway).
  const withhold = options.withhold;
  const namedUri: Named =
    withhold === undefined ? named : (uri) => named(withhold() === undefined ? uri : bareUri(uri));
  const namedReason: Named =
    withhold === undefined ? named : (reason) => named(withhold() === undefined ? reason : bareUrisIn(reason));
  const wanted = (type: AuditEventType) =>
    (config.eventTypes === undefined || config.eventTypes.has(type)) && !config.excludeEventTypes.has(type);
  const data = (value: unknown): string => {
    const withheld = options.withhold?.();
    if (withheld !== undefined) return `[withheld: ${withheld}]`;
    const text = redact(JSON.stringify(scrub(value)) ?? "");
    return text.length > config.maxDataSize ? `${text.slice(0, config.maxDataSize)}…(truncated)` : text;
  };

  const legacy = new LegacyAnswers(maxAnswerBytes);

  return (next) => async (req, ctx) => {
    const started = performance.now();
    // Authentication runs inside audit and records the principal on the request it receives:
    // the one audit handed on (events are written after next() returns, so it is known by then).
    let inner = req;
    const principal = () => principalOf(inner);
    // Refused by authentication: nobody known, which is not the local user of an endpoint without it.
    let unauthenticated = false;
    const base = () => ({
      component: config.component,
      source: {
        address: ctx.remoteAddress,
        ...(req.headers.get("user-agent") ? { userAgent: req.headers.get("user-agent") as string } : {}),
      },
      subject: principal()
        ? {
            sub: principal()?.subject,
            ...(typeof principal()?.claims.client_id === "string"
              ? { client: principal()?.claims.client_id as string }
              : {}),
          }
        : unauthenticated
          ? { unauthenticated: true }
          : { sub: "local" },
      // A keyed hash: the id itself would let anyone who reads the audit log use the session.
      ...(req.headers.get("mcp-session-id")
        ? { sessionId: sessionRef(req.headers.get("mcp-session-id") as string) }
        : {}),
    });
    const emit = (type: AuditEventType, fields: Record<string, unknown>) => {
      if (!wanted(type)) return;
      options.write(
        `${oneLine(JSON.stringify({ id: randomUUID(), time: new Date().toISOString(), type, ...base(), ...fields, durationMs: Math.round((performance.now() - started) * 100) / 100 }))}\n`,
      );
    };

    const body = await readRpcBody(req);
    if (body === undefined) {
      const response = await next(req, ctx);
      const denial = denialOf(response);
      unauthenticated = denial?.unauthenticated === true;
      if (denial?.invalid) {
        emit("mcp_request", {
          target: { path: named(pathOf(req.url)) },
          outcome: "denied",
          ...(denial.reason !== undefined ? { reason: namedReason(denial.reason) } : {}),
        });
        return response;
      }
      if (req.method === "GET") {
        emit("mcp_stream_open", {
          target: { path: named(pathOf(req.url)) },
          outcome: outcomeOf(undefined, response),
          status: response.status,
        });
        // A legacy SSE stream (no session header) carries the answers to that session's POSTs.
        if (isLegacyStream(req, response)) return legacy.watch(response);
      }
      if (req.method === "DELETE")
        emit("mcp_session_end", {
          target: { path: named(pathOf(req.url)) },
          outcome: outcomeOf(undefined, response),
          status: response.status,
        });
      return response;
    }
    const messages = body.messages;
    inner = forwardWith(req, body);
    const response = await next(inner, ctx);
    const denial = denialOf(response);
    unauthenticated = denial?.unauthenticated === true;
    const reasonOf = (outcome: string) =>
      outcome === "denied" && denial?.reason !== undefined ? { reason: namedReason(denial.reason) } : {};
    if (denial?.invalid) {
      // Refused before any policy decided on it (the server could have read it differently):
      // every message in it is recorded as refused, requests or not, with the reason, and as
      // a server matching keys case-insensitively would have read it ("Method" as method).
      const refused = messages.length > 0 ? messages.map(caseInsensitiveReading) : [undefined];
      for (const message of refused) {
        const method = typeof message?.method === "string" ? message.method : "";
        emit(
          typeByMethod[method] ?? (message?.id === undefined && method !== "" ? "mcp_notification" : "mcp_request"),
          {
            ...requestIdOf(message, named),
            target: auditTarget(message, named, namedUri),
            outcome: "denied",
            ...(denial.reason !== undefined ? { reason: namedReason(denial.reason) } : {}),
            ...(config.includeRequestData && message?.params !== undefined ? { request: data(message.params) } : {}),
          },
        );
      }
      return response;
    }
    const requests = new Map<JsonRpcId, JsonRpcMessage>();
    for (const message of messages) {
      if (typeof message !== "object" || message === null) continue;
      if (message.method !== undefined && message.id !== undefined) requests.set(message.id, message);
      else if (message.method !== undefined) {
        const outcome = outcomeOf(undefined, response);
        emit("mcp_notification", { target: auditTarget(message, named, namedUri), outcome, ...reasonOf(outcome) });
      }
    }
    if (requests.size === 0) return response;
    const record = (request: JsonRpcMessage, answer: JsonRpcMessage | undefined) => {
      // A 2026-07-28 input round is not the end of the call: its retry carries the same call
      // on, and the round that ends it writes the call's one line, with its outcome.
      if ((answer?.result as { resultType?: unknown } | null | undefined)?.resultType === "input_required") return;
      const outcome = outcomeOf(answer, response);
      emit(typeByMethod[request.method ?? ""] ?? "mcp_request", {
        ...requestIdOf(request, named),
        target: auditTarget(request, named, namedUri),
        outcome,
        ...reasonOf(outcome),
        ...(config.includeRequestData ? { request: data(request.params ?? {}) } : {}),
        ...(config.includeResponseData && answer ? { response: data(answer.result ?? answer.error ?? null) } : {}),
      });
    };
    if (legacy.isDeferred(req, response)) {
      // Legacy SSE: the answers come on the session's stream; recorded when they do.
      for (const [id, request] of requests)
        if (!legacy.expect(req, id, (answer) => record(request, answer))) record(request, undefined);
      return response;
    }
    const type = response.headers.get("content-type") ?? "";
    if (response.body !== null && type.includes("text/event-stream")) {
      // Watch the stream, pass it on unchanged; a request still unanswered when it ends
      // (or when the client goes away) is recorded without an answer.
      let watching = true;
      const parser = createParser({
        maxBufferSize: maxAnswerBytes,
        onError(error) {
          if (error.type === "max-buffer-size-exceeded") watching = false;
        },
        onEvent(event) {
          try {
            for (const answer of ([] as JsonRpcMessage[]).concat(JSON.parse(event.data) as JsonRpcMessage)) {
              const request = answer?.id !== undefined ? requests.get(answer.id) : undefined;
              if (request && answer.method === undefined) {
                requests.delete(answer.id as JsonRpcId);
                record(request, answer);
              }
            }
          } catch {
            // not JSON-RPC
          }
        },
      });
      return watchBody(response, {
        onChunk: sseFeeder((text) => watching && parser.feed(text)),
        onEnd: () => {
          for (const request of requests.values()) record(request, undefined);
          requests.clear();
        },
      });
    }
    const recordAnswers = (answerText: string | undefined) => {
      let answers: JsonRpcMessage[] = [];
      try {
        const parsed = JSON.parse(answerText ?? "") as JsonRpcMessage | JsonRpcMessage[];
        answers = Array.isArray(parsed) ? parsed : [parsed];
      } catch {
        // an HTTP-level refusal without a JSON-RPC body, or one too large to hold
      }
      for (const [id, request] of requests)
        record(
          request,
          answers.find((a) => a?.id === id) ??
            (answers.length === 1 && answers[0]?.id === null ? answers[0] : undefined),
        );
    };
    const declared = response.headers.get("content-length");
    if (response.body === null || (declared !== null && Number(declared) <= maxAnswerBytes)) {
      const answerText = response.body === null ? "" : await response.text();
      recordAnswers(answerText);
      return new Response(answerText, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    }
    // Of unknown or too large a size: streamed on as it comes, held for reading only up to the limit.
    const parts: Uint8Array[] = [];
    let held = declared === null ? 0 : Number.POSITIVE_INFINITY;
    return watchBody(response, {
      onChunk: (chunk) => {
        held += chunk.byteLength;
        if (held <= maxAnswerBytes) parts.push(chunk);
        else parts.length = 0;
      },
      onEnd: () => recordAnswers(held <= maxAnswerBytes ? Buffer.concat(parts, held).toString("utf8") : undefined),
    });
  };
}
