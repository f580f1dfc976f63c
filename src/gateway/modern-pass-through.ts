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
 * handler, and the handler would forward it, and relays it as that path did:
 *  - `_meta`: the SDK lifts the envelope's four keys off and the handler passes on every other key as
 *    the caller wrote it (a client's own keys, trace context, keys under a reserved prefix it does not
 *    know), the progress token replaced by the gateway's; so does the lane;
 *  - `Mcp-Name` in its Base64 form is taken when it decodes (as the revision says, and as the SDK
 *    checks it) to the tool's name: the member gets the header the gateway writes for it either way;
 *  - `inputResponses` reach a 2026-07-28 member exactly as written, whatever they answer (elicitation,
 *    sampling, roots): neither the SDK server nor its client checks them, the member does;
 *  - params the revision does not define (`task`, which 2026-07-28 moved to an extension the gateway
 *    does not offer, or a vendor's) are dropped, as the SDK's request schema drops them.
 * The checks below are narrower than the SDK's where it reads a value (every envelope key it knows
 * and every header in its plain form, a routed tool of an available member over streamable HTTP).
 * Anything else returns undefined before anything is sent, and the SDK answers it as before (its
 * refusals included): a capability it knows in an odd form, a progress token that is no string or
 * safe integer, a `requestState` that is no string or `arguments` no object (both refused there), an
 * own `__proto__` key in `_meta` or `arguments` (which the SDK's parse drops), ...
 *
 * The lane does not run the SDK's result schema over a member's tool result (that is the cost it
 * saves): a 2026-07-28 member's result that schema refuses (the SDK path answers -32603 "failed to
 * answer") is answered as the lane reads it (modern-answers.ts): one without `content` gets an empty
 * one, as a 2025-era member's does on either path; keys the schema does not know inside content
 * blocks, and a text block's malformed `annotations`, are passed on (the SDK drops those keys and
 * refuses that block); one that is no tool result at all is refused as -32602 (docs/gateway.md).
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
import { decodeHeaderValue } from "../proxy/tool-headers.ts";
import { version } from "../version.ts";
import type { GroupCatalog } from "./catalog.ts";
import { modernCallerEra } from "./modern-answers.ts";
import { modernMemberParams } from "./modern-caller.ts";
import { memberParamHeaders } from "./param-headers.ts";
import { plainCallParams, RelayedCall } from "./relayed-call.ts";
import type { GatewaySearch } from "./search.ts";
import type { UpstreamPool } from "./upstream-pool.ts";
import type { Upstream } from "./upstream.ts";
import { isObject } from "../objects.ts";
import { memberSend } from "./member-send.ts";

type Json = Record<string, unknown>;

export interface ModernPassThroughOptions {
  readonly group: string;
  readonly catalog: GroupCatalog;
  readonly timeoutMs: number;
  readonly search?: GatewaySearch | undefined;
}

/**
 * The per-request revisions the SDK's handler serves (its SUPPORTED_MODERN_PROTOCOL_VERSIONS, which it
 * does not export): a request naming any other goes to the SDK, which serves or refuses it.
 */
const servedRevisions = new Set(["2026-07-28"]);
/**
 * The envelope's keys, which the SDK server lifts off `_meta` before its handler runs (with the progress
 * token, which the gateway replaces): every other key reaches the member as the caller wrote it.
 */
const NOT_PASSED_ON = new Set([
  PROTOCOL_VERSION_META_KEY,
  CLIENT_INFO_META_KEY,
  CLIENT_CAPABILITIES_META_KEY,
  LOG_LEVEL_META_KEY,
  "progressToken",
]);
const LOG_LEVELS = new Set(["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]);
const CLIENT_INFO_KEYS = new Set(["name", "version", "title", "websiteUrl", "description"]);
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

/**
 * An own `__proto__` key (JSON.parse makes one), which the SDK's parse of `_meta` and `arguments`
 * drops and a relay of the object as parsed would keep.
 */
const hasProtoKey = (value: Json): boolean => Object.hasOwn(value, "__proto__");

/**
 * The request's `_meta`, when its envelope is one the SDK takes as it is and names a revision it serves
 * (`version`); keys beyond the envelope's are the caller's, whatever their values.
 */
function plainEnvelope(meta: unknown, version: string): Json | undefined {
  if (!isObject(meta) || hasProtoKey(meta)) return undefined;
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
  return meta;
}

/**
 * The tools/call params the lane relays, or undefined (see the module's comment): `inputResponses` of
 * any form (passed on as written), params beyond the revision's (dropped).
 */
function relayableParams(params: unknown): Json | undefined {
  if (!plainCallParams(params)) return undefined;
  if (params.requestState !== undefined && typeof params.requestState !== "string") return undefined;
  return params;
}

/**
 * The revision's header checks the SDK makes before serving (and answers itself when they fail):
 * a JSON body, both answer types accepted, MCP-Protocol-Version naming a revision it serves and equal
 * to the envelope's, Mcp-Method tools/call and Mcp-Name the tool's name, plain or in its Base64 form.
 * Any difference goes to the SDK, which refuses it as the revision says or serves it. (Header values
 * come with their surrounding spaces and tabs taken off, as the SDK reads them; nothing else is trimmed.)
 */
function plainHeaders(headers: Headers, name: string): string | undefined {
  if (!isJsonContentType(headers.get("content-type"))) return undefined;
  const accept = headers.get("accept");
  if (!accept?.includes("application/json") || !accept.includes("text/event-stream")) return undefined;
  const revision = headers.get("mcp-protocol-version");
  if (revision === null || !servedRevisions.has(revision)) return undefined;
  if (headers.get("mcp-method") !== "tools/call") return undefined;
  const nameHeader = headers.get("mcp-name");
  if (nameHeader === null || decodeHeaderValue(nameHeader) !== name) return undefined;
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
  // What the SDK path leaves in _meta once it lifted the envelope: the caller's own keys, and the progress token.
  const meta: Json = {};
  for (const key in envelope) if (!NOT_PASSED_ON.has(key)) meta[key] = envelope[key];
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
    send: memberSend(member),
    upstream,
    id,
    key: id,
    upstreamId,
    progressToken,
    era,
  }).run(member.url, headers, JSON.stringify({ jsonrpc: "2.0", id: upstreamId, method: "tools/call", params: sent }));
}
