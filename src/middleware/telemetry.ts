/**
 * Telemetry per MCP request (`--otel-*`): a server span named after the method (and the
 * tool, for tools/call) with the MCP semantic-convention attributes (and the legacy names
 * while --otel-use-legacy-attributes), W3C trace context continued from the client (the
 * request's `params._meta` first, then the HTTP headers) and passed on upstream, metrics (requests, duration, tool calls, active
 * sessions), and `/metrics` in Prometheus text when asked. Only installed when telemetry
 * is on; its module is loaded on demand, so without it the proxy pays nothing.
 */
import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Exception,
  type Link,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import type { TelemetrySpec } from "../config/telemetry-spec.ts";
import type { Telemetry } from "../telemetry/providers.ts";
import { pathOf, type Middleware, type RequestContext } from "../proxy/handler.ts";
import { targetOf, type JsonRpcMessage } from "../proxy/mcp-message.ts";
import { forwardWith, readRpcBody } from "./rpc-body.ts";
import { carryRequestState } from "../auth/request-state.ts";
import { refusedForeignSession } from "../proxy/session-refusal.ts";
import { ActiveSessions } from "./active-sessions.ts";
import { isDenied } from "./denials.ts";
import { sessionRef } from "./session-ref.ts";
import { isLegacyStream } from "./watch-stream.ts";
import { metaGetter, traceMetaOf, withTraceMeta } from "./trace-meta.ts";
import { bareUri } from "./withheld-uri.ts";

const propagator = new W3CTraceContextPropagator();
/** Upper bounds of the request-duration histogram's buckets, in seconds. */
const DURATION_BUCKETS_S = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
];
const headerGetter = {
  get: (carrier: Headers, key: string) => carrier.get(key) ?? undefined,
  keys: (carrier: Headers) => [...carrier.keys()],
};
const headerSetter = { set: (carrier: Headers, key: string, value: string) => carrier.set(key, value) };

/**
 * Longest span name kept: the method and tool are the client's to choose (up to the body limit) and
 * telemetry comes before authentication; a span holding megabytes would be kept in the export queue
 * and sent to the collector for anyone. (Attribute values are capped by the tracer: providers.ts.)
 */
const MAX_SPAN_NAME = 256;

function spanName(text: string): string {
  return text.length <= MAX_SPAN_NAME ? text : `${text.slice(0, MAX_SPAN_NAME)}…`;
}

/** What may keep a secret out of the spans: each is optional, and without one nothing is done per request. */
export interface SpanSecrets {
  /**
   * A gateway's (membership.ts `SecretHolders.withhold`). While it gives a reason, a span's
   * `mcp.resource.uri` has no userinfo, query or fragment (withheld-uri.ts): a member's key may be there,
   * and the gateway cannot redact it before it reaches the collector. Asked only for a resource's request.
   */
  readonly withhold?: () => string | undefined;
  /**
   * A workload's that holds secrets: the redactor its audit uses (workload/start.ts). Its process knows
   * the values, so what a span quotes of a request or an error (span name, tool, prompt, resource URI,
   * request id, exception) has them as `***`, as in its audit and log. Absent when it holds none.
   */
  readonly redact?: (text: string) => string;
}

export function telemetryMiddleware(
  spec: TelemetrySpec,
  telemetry: Telemetry,
  serverName: string,
  sessionIdleMs = 30 * 60_000,
  secrets: SpanSecrets = {},
): Middleware {
  const { withhold, redact } = secrets;
  // The identity when there is no redactor: `shown(x)` is then x itself, and costs one call.
  const shown = redact ?? ((text: string) => text);
  const meter = telemetry.meter;
  const requests = meter?.createCounter("mcp.server.requests", { description: "MCP requests handled by the proxy" });
  const duration = meter?.createHistogram("mcp.server.request.duration", {
    description: "Time until the answer started",
    unit: "s",
    // In seconds, as the unit says: the SDK's default boundaries (0, 5, 10, 25 …) are meant for
    // milliseconds and would put every MCP call in the first bucket. These span a sub-millisecond
    // local answer to a tool that works for minutes.
    advice: { explicitBucketBoundaries: DURATION_BUCKETS_S },
  });
  const toolCalls = meter?.createCounter("mcp.server.tool_calls", { description: "tools/call requests, by tool" });
  const sessions = meter?.createUpDownCounter("mcp.server.active_sessions", {
    description: "MCP sessions open on the proxy",
  });
  const tracked = sessions
    ? new ActiveSessions({ idleMs: sessionIdleMs, onChange: (delta) => sessions.add(delta) })
    : undefined;
  // Label values clients choose are bounded: unknown methods are "other" (notifications too: each invented
  // name would otherwise be a new series kept for the life of the process), tools past 200 distinct names too.
  const methodLabel = (method: string) =>
    /^(initialize|ping|server\/discover|subscriptions\/listen|tools\/(list|call)|prompts\/(list|get)|resources\/(list|read|subscribe|unsubscribe|templates\/list)|completion\/complete|logging\/setLevel|notifications\/(initialized|cancelled|progress|message|roots\/list_changed|(tools|prompts|resources)\/list_changed|resources\/updated|elicitation\/complete|subscriptions\/acknowledged|tasks\/status))$/.test(
      method,
    )
      ? method
      : "other";
  const toolLabels = new Set<string>();
  // A name gets a label of its own only from a call the policies let through: otherwise anyone who can
  // reach the port (telemetry comes before authentication) could use up the 200 with made-up names.
  const toolLabel = (tool: string, admitted: boolean) => {
    if (toolLabels.has(tool)) return tool;
    if (!admitted || toolLabels.size >= 200 || tool.length > 128) return "other";
    toolLabels.add(tool);
    return tool;
  };
  // A label is exported as a span attribute is: a tool named after a secret is named as the audit names it.
  const shownToolLabel = (tool: string, admitted: boolean) => {
    const label = toolLabel(tool, admitted);
    return label === "other" ? label : shown(label);
  };

  const attributesOf = (message: JsonRpcMessage, req: Request): Attributes => {
    const attrs: Attributes = {
      "mcp.method.name": message.method ?? "",
      "mcp.server.name": serverName,
      "rpc.system": "jsonrpc",
      "network.transport": "tcp",
      ...(message.id !== undefined && message.id !== null ? { "jsonrpc.request.id": shown(String(message.id)) } : {}),
      // A keyed hash (session-ref.ts): trace backends must not hold ids that open the session.
      ...(req.headers.get("mcp-session-id")
        ? { "mcp.session.id": sessionRef(req.headers.get("mcp-session-id") as string) }
        : {}),
      ...protocolVersionOf(message, req),
      ...Object.fromEntries(Object.entries(spec.envAttributes).map(([name, value]) => [`environment.${name}`, value])),
    };
    const target = targetOf(message);
    const tool = target?.kind === "tool" && target.name !== "" ? shown(target.name) : undefined;
    if (tool) Object.assign(attrs, { "gen_ai.tool.name": tool, "gen_ai.operation.name": "execute_tool" });
    if (target?.kind === "prompt" && target.name !== "") attrs["gen_ai.prompt.name"] = shown(target.name);
    if (target?.kind === "resource")
      attrs["mcp.resource.uri"] = shown(withhold?.() === undefined ? target.name : bareUri(target.name));
    if (spec.legacyAttributes) {
      attrs["mcp.method"] = message.method ?? "";
      if (message.id !== undefined && message.id !== null) attrs["mcp.request.id"] = shown(String(message.id));
      if (tool) attrs["mcp.tool.name"] = tool;
    }
    return attrs;
  };

  return (next) => async (req, ctx) => {
    if (telemetry.prometheusText && req.method === "GET" && pathOf(req.url) === "/metrics") {
      return new Response(await telemetry.prometheusText(), {
        headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
      });
    }
    const started = performance.now();
    let message: JsonRpcMessage | undefined;
    let forward = req;
    const body = await readRpcBody(req);
    if (body) {
      // A batch is one span, named after its first request.
      message = body.messages.find((m) => typeof m.method === "string");
      forward = forwardWith(req, body);
    }
    const method = message?.method;
    const sessionId = req.headers.get("mcp-session-id");
    if (sessionId !== null) tracked?.seen(sessionId);
    if (method === undefined) {
      const response = await next(forward, ctx);
      if (sessionId !== null && ((req.method === "DELETE" && response.ok) || sessionGone(response, ctx)))
        tracked?.ended(sessionId);
      // A legacy SSE stream (GET without a session header) is a session while it is open.
      if (tracked && isLegacyStream(req, response)) return tracked.streamed(response);
      return response;
    }
    const target = targetOf(message as JsonRpcMessage);
    const tool = target?.kind === "tool" ? target.name : undefined;
    const fromHeaders = propagator.extract(context.active(), req.headers, headerGetter);
    // The request's own trace context (`params._meta`, MCP 2026-07-28 and the OTel conventions for
    // MCP) comes first: the HTTP headers describe the HTTP request, which may carry other messages.
    // When both are there and differ, the header's context stays as a link. A malformed value is ignored.
    const meta = traceMetaOf(message);
    const fromMeta = meta ? propagator.extract(context.active(), meta, metaGetter) : undefined;
    const metaParent = fromMeta ? trace.getSpanContext(fromMeta) : undefined;
    const headerParent = trace.getSpanContext(fromHeaders);
    const parent: Context = metaParent ? (fromMeta as Context) : fromHeaders;
    const links: Link[] =
      metaParent && headerParent && headerParent.spanId !== metaParent.spanId ? [{ context: headerParent }] : [];
    const span = telemetry.tracer?.startSpan(
      spanName(tool ? `${method} ${shown(tool)}` : method),
      { kind: SpanKind.SERVER, attributes: attributesOf(message as JsonRpcMessage, req), links },
      parent,
    );
    if (span) {
      // The upstream continues this trace (the forwarder passes traceparent on), and so does the
      // `_meta` of a request that carried one: otherwise the server would skip the proxy's span.
      const spanContext = trace.setSpan(parent, span);
      const headers = new Headers(forward.headers);
      propagator.inject(spanContext, headers, headerSetter);
      const rewritten =
        body && meta && metaParent
          ? withTraceMeta(body, message as JsonRpcMessage, meta, (carrier, setter) =>
              propagator.inject(spanContext, carrier, setter),
            )
          : undefined;
      if (rewritten) headers.delete("content-length");
      forward = body
        ? forwardWith(forward, rewritten ?? body, headers)
        : carryRequestState(forward, new Request(forward, { headers }));
    }
    let status = "error";
    let admitted = false;
    try {
      const response = await next(forward, ctx);
      status = String(response.status);
      admitted = !isDenied(response);
      span?.setAttribute("http.response.status_code", response.status);
      if (response.status >= 400) span?.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${response.status}` });
      const session = response.headers.get("mcp-session-id");
      if (method === "initialize" && session) tracked?.opened(session);
      else if (sessionId !== null && sessionGone(response, ctx)) tracked?.ended(sessionId);
      return response;
    } catch (err) {
      span?.recordException(redact ? redactedException(err, redact) : (err as Error));
      span?.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span?.end();
      const labels = { "mcp.method.name": methodLabel(method), "http.response.status_code": status };
      requests?.add(1, labels);
      duration?.record((performance.now() - started) / 1000, { "mcp.method.name": methodLabel(method) });
      if (tool) toolCalls?.add(1, { "gen_ai.tool.name": shownToolLabel(tool, admitted) });
    }
  };
}

/** The exception event's message and stack as the audit would quote them: an error may quote the request. */
function redactedException(err: unknown, redact: (text: string) => string): Exception {
  if (!(err instanceof Error)) return redact(String(err));
  return {
    name: err.name,
    message: redact(err.message),
    ...(err.stack === undefined ? {} : { stack: redact(err.stack) }),
  };
}

/** A 404 for a session ends it, unless it refused another caller's request for the session (which goes on). */
function sessionGone(response: Response, ctx: RequestContext): boolean {
  return response.status === 404 && !refusedForeignSession(ctx);
}

/**
 * `mcp.protocol.version`: the `MCP-Protocol-Version` header, which clients send after the handshake;
 * an `initialize` carries none, so its own `params.protocolVersion` names the revision it asks for
 * (and a request without the header, its 2026-07-28 `_meta` version).
 */
function protocolVersionOf(message: JsonRpcMessage, req: Request): Attributes {
  const header = req.headers.get("mcp-protocol-version");
  if (header) return { "mcp.protocol.version": header };
  const params = (message as { params?: unknown }).params;
  if (typeof params !== "object" || params === null) return {};
  const fields = params as { protocolVersion?: unknown; _meta?: unknown };
  const meta = fields._meta as Record<string, unknown> | undefined;
  const version =
    message.method === "initialize" ? fields.protocolVersion : meta?.["io.modelcontextprotocol/protocolVersion"];
  return typeof version === "string" && version !== "" ? { "mcp.protocol.version": version } : {};
}
