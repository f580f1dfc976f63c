/**
 * Results of an older-revision server, shaped as 2026-07-28 clients expect them: every
 * result says `resultType: "complete"` and names the server in `_meta`; cacheable results
 * carry caching hints. The server's own list_changed notifications keep working, so the
 * hint is "immediately stale" (ttlMs 0) and "public" (the server has one client, mcpmgr,
 * so what it lists is the same for every caller; a policy that filters per user marks its
 * answer private on the way out). Error codes the new revision renumbered are mapped.
 */
import { JsonRpcCode } from "../jsonrpc.ts";
import { isCacheable, metaKey } from "./modern.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";

/** Resource not found in 2025-11-25 and earlier; the new revision answers -32602. */
const legacyResourceNotFound = -32002;

export function shapeForModernClient(message: JsonRpcMessage, method: string, serverInfo: unknown): JsonRpcMessage {
  if (message.error !== undefined) {
    if (message.error.code !== legacyResourceNotFound) return message;
    return { ...message, error: { ...message.error, code: JsonRpcCode.invalidParams } };
  }
  const result = (typeof message.result === "object" && message.result !== null ? message.result : {}) as Record<
    string,
    unknown
  >;
  const meta = result._meta as Record<string, unknown> | undefined;
  const shaped: Record<string, unknown> = {
    ...result,
    resultType: "complete",
    _meta: { ...meta, [metaKey.serverInfo]: meta?.[metaKey.serverInfo] ?? serverInfo },
  };
  if (isCacheable(method)) {
    if (typeof shaped.ttlMs !== "number") shaped.ttlMs = 0;
    if (shaped.cacheScope !== "private" && shaped.cacheScope !== "public") shaped.cacheScope = "public";
  }
  return { ...message, result: shaped };
}
