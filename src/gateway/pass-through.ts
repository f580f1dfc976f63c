/**
 * The fast lane for the call the gateway serves most: a 2025-era session's `tools/call` of a tool the
 * catalog routes. Through the SDK, every such call was validated by zod four times (the server's
 * request and result, the client's request and result), sent with `fetch` (a hop to Bun's HTTP
 * thread and back) and answered over web streams. Here the body the policies already parsed is
 * rewritten once (the member's tool name, the gateway's own id and progress token) and POSTed on the
 * member's upstream session with mcpmgr's own HTTP/1.1 client (proxy/upstream/); the member's
 * answer goes back with only its id (and progress token) changed, as JSON or as an event stream as
 * the member framed it.
 *
 * The lane takes a call only when the SDK would have handed it to the gateway's tools/call handler
 * and the handler would have forwarded it: anything else (a header the SDK refuses, params beyond
 * name/arguments/_meta, an unknown or unavailable tool, search mode's own tools and rewritten
 * call_tool calls, a member reached over the deprecated SSE transport or 2026-07-28) returns
 * undefined before anything is sent, and the SDK answers it as before. What the SDK did on the way
 * is kept: the id is claimed in the session (a reused id is refused by the front end), progress
 * reaches the caller under its own token and resets the timeout, a client's notifications/cancelled
 * or disconnect sends notifications/cancelled to the member, requests and log messages the member
 * sends on the call's stream go through the session's SDK client and server as before and come back
 * on this call's stream (session-transport.ts), errors read as they did. The client's id is kept as
 * written, so ids beyond 2^53 and fractional ids are answered as the bridge answers them.
 */
import { isJsonContentType, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/server";
import type { RequestId } from "@modelcontextprotocol/server";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { JsonRpcId } from "../proxy/jsonrpc.ts";
import type { RpcBody } from "../middleware/rpc-body.ts";
import type { GroupCatalog } from "./catalog.ts";
import { plainCallParams, RelayedCall, type RelaySession } from "./relayed-call.ts";
import type { GatewaySearch } from "./search.ts";
import type { Upstream } from "./upstream.ts";
import { isObject } from "../objects.ts";
import { memberSend } from "./member-send.ts";

type Json = Record<string, unknown>;

export interface PassThroughOptions {
  readonly catalog: GroupCatalog;
  readonly timeoutMs: number;
  readonly search?: GatewaySearch | undefined;
}

export type PassThroughSession = RelaySession;

const jsonWithRaw = JSON as typeof JSON & { rawJSON(text: string): unknown; isRawJSON(value: unknown): boolean };
/** 2025-era revisions the session's SDK transport accepts in MCP-Protocol-Version. */
const legacyVersions = new Set(SUPPORTED_PROTOCOL_VERSIONS.filter((version) => version < "2026"));
const PARAM_KEYS = new Set(["name", "arguments", "_meta"]);
/** The gateway's ids on a member session: strings, which the SDK client (numeric ids) never uses. */
let nextId = 0;

/**
 * The client's id as it wrote it: a number JSON.parse cannot hold exactly (beyond 2^53, fractional)
 * keeps its digits, as raw JSON (typed as the string or number it stands for).
 */
function clientId(id: unknown, text: string): RequestId | undefined {
  if (typeof id === "string" || (typeof id === "number" && Number.isSafeInteger(id))) return id;
  if (typeof id === "object" && id !== null && jsonWithRaw.isRawJSON(id)) return id as unknown as RequestId;
  if (typeof id !== "number") return undefined;
  let source: string | undefined;
  JSON.parse(text, function (this: unknown, key: string, value: unknown, context?: { source?: string }) {
    if (key === "id" && this !== null && typeof this === "object" && "method" in this) source = context?.source;
    return value;
  } as never);
  return (source === undefined ? id : jsonWithRaw.rawJSON(source)) as RequestId;
}

/**
 * The tools/call params the lane can relay, or undefined: only what the SDK's request schema surely
 * accepts (name, arguments as an object, _meta as an object with a string or number progress token)
 * and passes on as written (not an own `__proto__` key in arguments or _meta, which JSON.parse makes
 * and the SDK's parse drops).
 */
function relayableParams(params: unknown): Json | undefined {
  if (!plainCallParams(params)) return undefined;
  for (const key in params) if (!PARAM_KEYS.has(key)) return undefined;
  const meta = params._meta;
  if (meta === undefined) return params;
  if (!isObject(meta) || Object.hasOwn(meta, "__proto__")) return undefined;
  const token = meta.progressToken;
  if (token !== undefined && typeof token !== "string" && typeof token !== "number") return undefined;
  return params;
}

/** Whether the SDK transport would take this POST as it is (else it answers the error itself). */
function acceptedHeaders(headers: Headers): boolean {
  const accept = headers.get("accept");
  if (!accept?.includes("application/json") || !accept.includes("text/event-stream")) return false;
  if (!isJsonContentType(headers.get("content-type"))) return false;
  const version = headers.get("mcp-protocol-version");
  return version === null || legacyVersions.has(version);
}

/** The member's 2025-era streamable-HTTP session behind an upstream client, or undefined. */
function memberSession(upstream: Upstream): { sessionId?: string; protocolVersion?: string } | undefined {
  if (upstream.getProtocolEra() !== "legacy") return undefined;
  const transport = upstream.transport;
  if (!(transport instanceof StreamableHTTPClientTransport)) return undefined;
  return {
    ...(transport.sessionId !== undefined ? { sessionId: transport.sessionId } : {}),
    ...(transport.protocolVersion !== undefined ? { protocolVersion: transport.protocolVersion } : {}),
  };
}

/**
 * Relays a session's tools/call past the SDK, or undefined when the SDK must answer it. `body` is the
 * POST's body as the policies left it; its id has been claimed in the session by the front end.
 */
export async function passThrough(
  options: PassThroughOptions,
  session: PassThroughSession,
  req: Request,
  body: RpcBody,
): Promise<Response | undefined> {
  const message = body.value;
  if (!isObject(message) || message.method !== "tools/call" || message.jsonrpc !== "2.0") return undefined;
  const params = relayableParams(message.params);
  if (params === undefined || !acceptedHeaders(req.headers)) return undefined;
  const name = params.name as string;
  const { catalog, search } = options;
  if (search !== undefined && !search.routesDirectly(name, req, message.id as JsonRpcId)) return undefined;
  const owned = catalog.view.toolNames.byGatewayName.get(name);
  if (owned === undefined || catalog.whyUnavailable(owned.workload) !== undefined) return undefined;
  const member = catalog.member(owned.workload);
  if (member === undefined) return undefined;
  const id = clientId(message.id, body.text);
  if (id === undefined) return undefined;
  let upstream: Upstream;
  try {
    upstream = await session.pool.get(owned.workload);
  } catch {
    return undefined; // the SDK's handler tries again and words the failure
  }
  const memberSide = memberSession(upstream);
  if (memberSide === undefined) return undefined;

  const upstreamId = `mcpmgr-${++nextId}`;
  const meta = params._meta as Json | undefined;
  const progressToken = meta?.progressToken as string | number | undefined;
  const sent: Json = { ...params, name: owned.name };
  if (progressToken !== undefined) sent._meta = { ...meta, progressToken: upstreamId };
  const headers: [string, string][] = [
    ["content-type", "application/json"],
    ["accept", "application/json, text/event-stream"],
  ];
  if (memberSide.sessionId !== undefined) headers.push(["mcp-session-id", memberSide.sessionId]);
  if (memberSide.protocolVersion !== undefined) headers.push(["mcp-protocol-version", memberSide.protocolVersion]);
  if (member.credential !== undefined) headers.push(["authorization", `Bearer ${member.credential}`]);
  for (const trace of ["traceparent", "tracestate"]) {
    const value = req.headers.get(trace);
    if (value) headers.push([trace, value]);
  }
  return new RelayedCall(options.timeoutMs, session, req, {
    workload: owned.workload,
    send: memberSend(member),
    upstream,
    id,
    key: message.id as RequestId,
    upstreamId,
    progressToken,
  }).run(member.url, headers, JSON.stringify({ jsonrpc: "2.0", id: upstreamId, method: "tools/call", params: sent }));
}
