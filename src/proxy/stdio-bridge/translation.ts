/**
 * Translation between the eras for single messages: what an older server may see of a
 * 2026-07-28 request, what a modern server needs from a session's request, the
 * server/discover answer the bridge gives for an older server, and the error a call gets
 * when it needed a capability its client did not declare.
 */
import type { JsonRpcId } from "../jsonrpc.ts";
import type { ServerInit } from "./handshake.ts";
import { withoutRoundFields } from "./input-rounds.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import { metaKey, ModernCode, modernProtocolVersions } from "./modern.ts";
import type { ClientSession } from "./session.ts";

/** The bridge's DiscoverResult for an older server, from its initialize result. */
export function discoverResult(server: ServerInit): Record<string, unknown> {
  return {
    resultType: "complete",
    supportedVersions: [...modernProtocolVersions],
    capabilities: server.capabilities,
    ...(server.instructions !== undefined ? { instructions: server.instructions } : {}),
    _meta: { [metaKey.serverInfo]: server.serverInfo },
    ttlMs: 0,
    cacheScope: "public",
  };
}

/** A modern client's params as an older server may see them: no round fields, no 2026 envelope. */
export function forOlderServer(params: Record<string, unknown>): Record<string, unknown> {
  const rest = withoutRoundFields(params);
  const meta = rest._meta;
  if (meta === undefined) return rest;
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(meta as Record<string, unknown>))
    if (!key.startsWith("io.modelcontextprotocol/")) kept[key] = value;
  const { _meta: _dropped, ...withoutMeta } = rest;
  return Object.keys(kept).length > 0 ? { ...withoutMeta, _meta: kept } : withoutMeta;
}

/** A session's request as a modern server needs it: its context in `_meta`. */
export function withSessionMeta(
  message: JsonRpcMessage,
  session: ClientSession,
  clientInfo: { name: string; version: string } | undefined,
): JsonRpcMessage {
  const meta: Record<string, unknown> = {
    ...message.params?._meta,
    [metaKey.protocolVersion]: modernProtocolVersions[0],
    [metaKey.clientCapabilities]: session.capabilities,
    ...(clientInfo ? { [metaKey.clientInfo]: clientInfo } : {}),
    ...(session.logLevel !== undefined ? { [metaKey.logLevel]: session.logLevel } : {}),
  };
  return { ...message, params: { ...message.params, _meta: meta } };
}

/** `required` names the capabilities in detail when a bare name is not enough (`elicitation: { url: {} }`). */
export function missingCapabilityError(
  id: JsonRpcId,
  missing: ReadonlySet<string>,
  required?: Record<string, object>,
): JsonRpcMessage {
  const requiredCapabilities: Record<string, object> = { ...required };
  for (const capability of missing) requiredCapabilities[capability] ??= {};
  return {
    jsonrpc: "2.0",
    id,
    error: {
      code: ModernCode.missingRequiredClientCapability,
      message: `Missing required client capability: ${[...missing].join(", ")}`,
      data: { requiredCapabilities },
    },
  };
}
