/**
 * The fast lane for a 2026-07-28 caller's `tools/call` of a tool the catalog routes: the sibling of
 * pass-through.ts for stateless requests. Through the SDK, each such request built a gateway server
 * of its own (createMcpHandler's per-request factory), validated the envelope, the request and the
 * result with zod on both sides, and reached the member with `fetch`. Here the request the policies
 * parsed is checked cheaply, rewritten once and POSTed on the caller's upstream connection with
 * mcpmgr's HTTP/1.1 client, through the same relay as a session's call (relayed-call.ts,
 * member-stream.ts), with this revision's `CallerEra`:
 *  - a member reached as a 2026-07-28 server (every stdio workload through its bridge) gets a
 *    2026-07-28 request: its own revision and the gateway's identity in the envelope, the caller's
 *    capabilities (only what a member may ask for), log level, `inputResponses` and `requestState`,
 *    and the `Mcp-*` headers with the tool's `Mcp-Param-*` (modern-caller.ts, param-headers.ts); its
 *    `input_required` result and its errors (a 400 with -32021 included) come back as they are, its
 *    log lines for the request only when the caller asked for them;
 *  - a 2025-era member (its streamable-HTTP session) gets the call as a session's call; its -32042
 *    becomes an input round or -32021, as on the SDK path (modern-caller.ts); its own requests get the
 *    error the caller's pool gives them and its log lines go nowhere, as on the SDK path.
 * Every answer is stamped as the gateway's SDK server stamps a 2026-07-28 result (`resultType`, the
 * gateway's `serverInfo`, the member's taken out). Cancellation is the caller closing its request.
 *
 * The lane takes a request only when the SDK would surely serve it with the gateway's tools/call
 * handler, and the handler would forward it: the checks below are narrower than the SDK's (every
 * envelope and header in its plain form, params the handler knows, a routed tool of an available
 * member over streamable HTTP). Anything else returns undefined before anything is sent, and the SDK
 * answers it as before (its refusals included): a Base64 `Mcp-Name`, unknown `_meta` keys, a
 * capability it knows in an odd form, a sampling or roots answer in `inputResponses`, ...
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  isJsonContentType,
  LOG_LEVEL_META_KEY,
  PROTOCOL_VERSION_META_KEY,
} from "@modelcontextprotocol/server";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { RpcBody } from "../middleware/rpc-body.ts";
import type { JsonRpcId } from "../proxy/jsonrpc.ts";
import { headerValue } from "../proxy/remote-client/request-headers.ts";
import { version } from "../version.ts";
import type { GroupCatalog } from "./catalog.ts";
import { modernCallerEra } from "./modern-answers.ts";
import { modernMemberParams } from "./modern-caller.ts";
import { memberParamHeaders } from "./param-headers.ts";
import { RelayedCall } from "./relayed-call.ts";
import type { GatewaySearch } from "./search.ts";
import type { UpstreamPool } from "./upstream-pool.ts";
import type { Upstream } from "./upstream.ts";

type Json = Record<string, unknown>;

export interface ModernPassThroughOptions {
  readonly group: string;
  readonly catalog: GroupCatalog;
  readonly timeoutMs: number;
  readonly search?: GatewaySearch | undefined;
}

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);
/**
 * The per-request revisions the SDK's handler serves (its SUPPORTED_MODERN_PROTOCOL_VERSIONS, which it
 * does not export): a request naming any other goes to the SDK, which serves or refuses it.
 */
const servedRevisions = new Set(["2026-07-28"]);
/**
 * OpenTelemetry trace context, which the revision reserves in `_meta` (W3C Trace Context and Baggage)
 * and which tracing clients send on every request: the SDK path passes it on to the member as written.
 */
const TRACE_META_KEYS = ["traceparent", "tracestate", "baggage"] as const;
const PARAM_KEYS = new Set(["name", "arguments", "_meta", "inputResponses", "requestState"]);
const META_KEYS = new Set([
  PROTOCOL_VERSION_META_KEY,
  CLIENT_INFO_META_KEY,
  CLIENT_CAPABILITIES_META_KEY,
  LOG_LEVEL_META_KEY,
  "progressToken",
  ...TRACE_META_KEYS,
]);
const LOG_LEVELS = new Set(["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]);
const CLIENT_INFO_KEYS = new Set(["name", "version", "title", "websiteUrl", "description"]);
const ELICIT_ACTIONS = new Set(["accept", "decline", "cancel"]);
/** The gateway's ids on a member connection: strings, which the SDK client (numeric ids) never uses. */
let nextId = 0;

/** Every key of `value` is in `keys`. */
function only(value: Json, keys: ReadonlySet<string>): boolean {
  for (const key in value) if (!keys.has(key)) return false;
  return true;
}

const KNOWN_CAPABILITIES = new Set(["sampling", "elicitation", "roots", "experimental", "extensions"]);
const SAMPLING_KEYS = new Set(["context", "tools"]);
const ELICITATION_KEYS = new Set(["form", "url"]);
const ROOTS_KEYS = new Set(["listChanged"]);
const FORM_KEYS = new Set(["applyDefaults"]);

/**
 * Client capabilities the SDK's schema surely accepts: the ones it knows in their plain form (it
 * ignores the others, and so does the gateway: only sampling, elicitation and roots reach a member).
 * The SDK path hands a member the capabilities as the caller wrote them, so does the lane.
 */
function plainCapabilities(capabilities: unknown): boolean {
  if (!isObject(capabilities)) return false;
  for (const key in capabilities) {
    const value = capabilities[key];
    if (!KNOWN_CAPABILITIES.has(key)) continue;
    if (!isObject(value)) return false;
    switch (key) {
      case "sampling":
        if (!only(value, SAMPLING_KEYS) || !Object.values(value).every(isObject)) return false;
        break;
      case "elicitation": {
        // An empty one means form mode (the SDK reads it so when it checks a requirement).
        if (!only(value, ELICITATION_KEYS)) return false;
        if (!Object.values(value).every(isObject)) return false;
        const form = value.form as Json | undefined;
        if (form !== undefined && !only(form, FORM_KEYS)) return false;
        if (form?.applyDefaults !== undefined && typeof form.applyDefaults !== "boolean") return false;
        break;
      }
      case "roots":
        if (!only(value, ROOTS_KEYS) || (value.listChanged !== undefined && typeof value.listChanged !== "boolean"))
          return false;
        break;
      default: // experimental, extensions
        if (!Object.values(value).every(isObject)) return false;
    }
  }
  return true;
}

/** The request's envelope, when it is one the SDK takes as it is and names a revision it serves (`version`). */
function plainEnvelope(meta: unknown, version: string): Json | undefined {
  if (!isObject(meta) || !only(meta, META_KEYS)) return undefined;
  if (meta[PROTOCOL_VERSION_META_KEY] !== version || !plainCapabilities(meta[CLIENT_CAPABILITIES_META_KEY]))
    return undefined;
  const info = meta[CLIENT_INFO_META_KEY];
  if (info !== undefined) {
    if (!isObject(info) || !only(info, CLIENT_INFO_KEYS)) return undefined;
    if (typeof info.name !== "string" || typeof info.version !== "string") return undefined;
    for (const key in info) if (typeof info[key] !== "string") return undefined;
  }
  const level = meta[LOG_LEVEL_META_KEY];
  if (level !== undefined && !LOG_LEVELS.has(level as string)) return undefined;
  const token = meta.progressToken;
  if (token !== undefined && typeof token !== "string" && !Number.isSafeInteger(token)) return undefined;
  for (const key of TRACE_META_KEYS) if (meta[key] !== undefined && typeof meta[key] !== "string") return undefined;
  return meta;
}

/** An elicitation's answer in its plain form (action, and content of primitives and string lists). */
function plainElicitAnswer(answer: unknown): boolean {
  if (!isObject(answer) || !ELICIT_ACTIONS.has(answer.action as string)) return false;
  for (const key in answer) if (key !== "action" && key !== "content") return false;
  const content = answer.content;
  if (content === undefined) return true;
  if (!isObject(content)) return false;
  for (const key in content) {
    const value = content[key];
    if (Array.isArray(value) ? !value.every((item) => typeof item === "string") : !isPrimitive(value)) return false;
  }
  return true;
}

const isPrimitive = (value: unknown): boolean =>
  typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value));

/** The tools/call params the lane relays, or undefined (see the module's comment). */
function relayableParams(params: unknown): Json | undefined {
  if (!isObject(params) || typeof params.name !== "string" || !only(params, PARAM_KEYS)) return undefined;
  if (params.arguments !== undefined && !isObject(params.arguments)) return undefined;
  if (params.requestState !== undefined && typeof params.requestState !== "string") return undefined;
  const answers = params.inputResponses;
  if (answers !== undefined && (!isObject(answers) || !Object.values(answers).every(plainElicitAnswer)))
    return undefined;
  return params;
}

/**
 * The revision's header checks the SDK makes before serving (and answers itself when they fail):
 * a JSON body, both answer types accepted, MCP-Protocol-Version naming a revision it serves and equal
 * to the envelope's, Mcp-Method tools/call and Mcp-Name the tool's name, plain. Any difference goes to
 * the SDK, which refuses it as the revision says or serves it.
 */
function plainHeaders(headers: Headers, name: string): string | undefined {
  if (!isJsonContentType(headers.get("content-type"))) return undefined;
  const accept = headers.get("accept");
  if (!accept?.includes("application/json") || !accept.includes("text/event-stream")) return undefined;
  const revision = headers.get("mcp-protocol-version")?.trim();
  if (revision === undefined || !servedRevisions.has(revision)) return undefined;
  if (headers.get("mcp-method")?.trim() !== "tools/call") return undefined;
  if (headers.get("mcp-name")?.trim() !== name || headerValue(name) !== name) return undefined;
  return revision;
}

/** The member's streamable-HTTP transport behind an upstream client, or undefined (the deprecated SSE one). */
function streamableTransport(upstream: Upstream): StreamableHTTPClientTransport | undefined {
  const transport = upstream.transport;
  return transport instanceof StreamableHTTPClientTransport ? transport : undefined;
}

/** A 2026-07-28 tools/call in the plain form the lane takes (`plainModernCall`). */
export interface PlainModernCall {
  readonly id: string | number;
  readonly params: Json;
  readonly envelope: Json;
}

/**
 * The request as a 2026-07-28 tools/call the lane may take, or undefined: checked on the headers and
 * the body the policies parsed, without the SDK. Such a request is one the SDK classifies as a
 * 2026-07-28 request and serves (its envelope claims the revision its MCP-Protocol-Version names), so
 * the front end asks this before the SDK's own classification.
 */
export function plainModernCall(req: Request, body: RpcBody): PlainModernCall | undefined {
  const message = body.value;
  if (!isObject(message) || message.method !== "tools/call" || message.jsonrpc !== "2.0") return undefined;
  const id = message.id;
  if (typeof id !== "string" && !Number.isSafeInteger(id)) return undefined;
  const params = relayableParams(message.params);
  if (params === undefined) return undefined;
  const revision = plainHeaders(req.headers, params.name as string);
  const envelope = revision === undefined ? undefined : plainEnvelope(params._meta, revision);
  return envelope === undefined ? undefined : { id: id as string | number, params, envelope };
}

/**
 * Relays a plain 2026-07-28 tools/call (`plainModernCall`) past the SDK, or undefined when the SDK must
 * answer it. Its Mcp-Param-* headers have been checked against the tool (front-end.ts); `pool` is the
 * caller's.
 */
export async function modernPassThrough(
  options: ModernPassThroughOptions,
  pool: UpstreamPool,
  req: Request,
  call: PlainModernCall,
): Promise<Response | undefined> {
  const { id, params, envelope } = call;
  const name = params.name as string;
  const { catalog, search } = options;
  if (search !== undefined && !search.routesDirectly(name, req, id as JsonRpcId)) return undefined;
  const owned = catalog.view.toolNames.byGatewayName.get(name);
  if (owned === undefined || catalog.whyUnavailable(owned.workload) !== undefined) return undefined;
  const member = catalog.member(owned.workload);
  if (member === undefined) return undefined;
  let upstream: Upstream;
  try {
    upstream = await pool.get(owned.workload);
  } catch {
    return undefined; // the SDK's handler tries again and words the failure
  }
  const transport = streamableTransport(upstream);
  if (transport === undefined) return undefined;
  const modernMember = upstream.getProtocolEra() !== "legacy";
  const memberRevision = modernMember ? upstream.getNegotiatedProtocolVersion() : transport.protocolVersion;
  if (modernMember && memberRevision === undefined) return undefined;

  const upstreamId = `mcpmgr-m${++nextId}`;
  const progressToken = envelope.progressToken as string | number | undefined;
  const routed: Json = { name: owned.name };
  if (params.arguments !== undefined) routed.arguments = params.arguments;
  // What the SDK path leaves in _meta once it lifted the envelope: trace context and the progress token.
  const meta: Json = {};
  for (const key of TRACE_META_KEYS) if (envelope[key] !== undefined) meta[key] = envelope[key];
  if (progressToken !== undefined) meta.progressToken = upstreamId;
  if (Object.keys(meta).length > 0) routed._meta = meta;
  const headers: [string, string][] = [
    ["content-type", "application/json"],
    ["accept", "application/json, text/event-stream"],
  ];
  let sent = routed;
  if (modernMember) {
    // The member's own revision and the gateway's identity, as the SDK client's envelope; the caller's
    // capabilities, log level and retry material, as the SDK path adds them (modern-caller.ts).
    sent = modernMemberParams(routed, envelope, params);
    sent._meta = {
      ...(sent._meta as Json),
      [PROTOCOL_VERSION_META_KEY]: memberRevision,
      [CLIENT_INFO_META_KEY]: { name: "mcpmgr-gateway", version },
    };
    headers.push(
      ["mcp-protocol-version", memberRevision as string],
      ["mcp-method", "tools/call"],
      ["mcp-name", headerValue(owned.name)],
    );
    // The tool's Mcp-Param-* headers, from its declarations as the gateway lists it (the member checks them too).
    for (const [header, value] of Object.entries(memberParamHeaders(params, catalog.view.tools)))
      headers.push([header, value]);
  } else {
    if (transport.sessionId !== undefined) headers.push(["mcp-session-id", transport.sessionId]);
    if (memberRevision !== undefined) headers.push(["mcp-protocol-version", memberRevision]);
  }
  if (member.credential !== undefined) headers.push(["authorization", `Bearer ${member.credential}`]);
  for (const trace of ["traceparent", "tracestate"]) {
    const value = req.headers.get(trace);
    if (value) headers.push([trace, value]);
  }
  const era = modernCallerEra({
    serverInfo: { name: `mcpmgr-gateway-${options.group}`, version },
    workload: owned.workload,
    modernMember,
    capabilities: envelope[CLIENT_CAPABILITIES_META_KEY] as Json,
    logs: envelope[LOG_LEVEL_META_KEY] !== undefined,
  });
  return new RelayedCall(options.timeoutMs, { pool }, req, {
    workload: owned.workload,
    upstream,
    id,
    key: id,
    upstreamId,
    progressToken,
    era,
  }).run(member.url, headers, JSON.stringify({ jsonrpc: "2.0", id: upstreamId, method: "tools/call", params: sent }));
}
