/**
 * What the gateway adds, for a 2026-07-28 caller, to what the SDK server and client do between the
 * caller and a member. Such a caller has no session: it says what it can answer and how much it wants
 * logged in each request's `_meta`, and answers an `input_required` result by calling again with
 * `inputResponses` and the `requestState` it was given. The SDK server lifts all of that off the
 * request before the gateway's handler runs; a member reached as a 2026-07-28 server (upstream.ts
 * `preferModern`) needs it on its own request, so it goes back on, per request: the capabilities
 * (only what a member may ask for, as for a session), the log level, and the retry material exactly
 * as the caller wrote it. A member's `input_required` result comes back to the caller as it is.
 * A 2025-era member cannot ask that way: its -32042 ("open this URL, then call again", which
 * 2026-07-28 forbids on its wire) becomes the input round the stdio bridge makes of it
 * (`urlElicitationRound`), or -32021 for a caller that cannot open URLs.
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  LOG_LEVEL_META_KEY,
  ProtocolError,
  SERVER_INFO_META_KEY,
  type ServerContext,
} from "@modelcontextprotocol/server";
import type { JsonRpcId } from "../proxy/jsonrpc.ts";
import { URL_ELICITATION_REQUIRED, urlElicitationRound } from "../proxy/stdio-bridge/older-server.ts";
import type { Params } from "./sdk.ts";
import { mirrored } from "./member-traffic.ts";
import { isObject } from "../objects.ts";

/** A 2026-07-28 request as its caller sent it: its params before the SDK lifted anything off them. */
export interface ModernRequest {
  readonly params: Params | undefined;
}

/** The request's envelope as the SDK lifted it (typed by the SDK as an empty object). */
const envelopeOf = (ctx: ServerContext): Params => (ctx.mcpReq.envelope ?? {}) as Params;

/** The capabilities the caller declared in this request, or none. */
function declaredCapabilities(ctx: ServerContext): Params {
  const declared = envelopeOf(ctx)[CLIENT_CAPABILITIES_META_KEY];
  return isObject(declared) ? declared : {};
}

/**
 * The params for a member reached as a 2026-07-28 server: `sent` (the routed params) with the
 * caller's capabilities and log level in `_meta` (the SDK client lets these win over its own
 * envelope's) and the caller's `inputResponses` and `requestState` as written.
 */
export function paramsForModernMember(sent: Params, ctx: ServerContext, request: ModernRequest): Params {
  return modernMemberParams(sent, envelopeOf(ctx), request.params);
}

/**
 * The same from the caller's envelope (`_meta` as the caller wrote it, or as the SDK lifted it) and
 * its params as sent: what the SDK path hands the SDK client, and what the fast lane
 * (modern-pass-through.ts) sends itself.
 */
export function modernMemberParams(sent: Params, envelope: Params, raw: Params | undefined): Params {
  const declared = envelope[CLIENT_CAPABILITIES_META_KEY];
  const meta: Params = {
    ...(isObject(sent._meta) ? sent._meta : {}),
    [CLIENT_CAPABILITIES_META_KEY]: mirrored(isObject(declared) ? declared : {}),
  };
  if (envelope[LOG_LEVEL_META_KEY] !== undefined) meta[LOG_LEVEL_META_KEY] = envelope[LOG_LEVEL_META_KEY];
  const params: Params = { ...sent, _meta: meta };
  if (raw?.inputResponses !== undefined) params.inputResponses = raw.inputResponses;
  if (raw?.requestState !== undefined) params.requestState = raw.requestState;
  return params;
}

/** Whether the caller's request set a log level: only then may the member send it log lines. */
export function asksForLogs(ctx: ServerContext): boolean {
  return envelopeOf(ctx)[LOG_LEVEL_META_KEY] !== undefined;
}

/**
 * A 2025-era member's -32042 as the caller's answer: an input round (returned) or -32021 (thrown);
 * undefined for any other error, which reaches the caller as it is.
 */
export function urlElicitationAnswer(err: unknown, ctx: ServerContext): Params | undefined {
  if (!(err instanceof ProtocolError) || err.code !== URL_ELICITATION_REQUIRED) return undefined;
  const answer = urlElicitationRound(
    ctx.mcpReq.id as JsonRpcId,
    { code: err.code, message: err.message, ...(err.data !== undefined ? { data: err.data } : {}) },
    declaredCapabilities(ctx),
  );
  if (answer.error !== undefined) throw new ProtocolError(answer.error.code, answer.error.message, answer.error.data);
  return answer.result as Params;
}

/**
 * A member's result without the member's own `io.modelcontextprotocol/serverInfo`: the caller talks
 * to the gateway, whose SDK server puts its own there (2026-07-28 callers); the rest of `_meta` stays.
 */
export function withoutMemberIdentity(result: Params): Params {
  const meta = result._meta;
  if (!isObject(meta) || !(SERVER_INFO_META_KEY in meta)) return result;
  const { [SERVER_INFO_META_KEY]: _member, ...rest } = meta;
  if (Object.keys(rest).length > 0) return { ...result, _meta: rest };
  const { _meta: _dropped, ...plain } = result;
  return plain;
}
