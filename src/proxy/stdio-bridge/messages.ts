/**
 * JSON-RPC 2.0 messages as the bridge sees them (the one message type is proxy/mcp-message.ts).
 * Messages are parsed once (JSON.parse) and then only their `id` or progress token is
 * rewritten in place.
 */
import type { JsonRpcId } from "../jsonrpc.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import { isObject } from "../../objects.ts";

export type MessageKind = "request" | "notification" | "response" | "invalid";

export function kindOf(message: unknown): MessageKind {
  if (!isObject(message)) return "invalid";
  const m = message as Partial<JsonRpcMessage>;
  if (m.jsonrpc !== "2.0") return "invalid";
  const hasId = typeof m.id === "string" || typeof m.id === "number" || isExactInteger(m.id);
  if (typeof m.method === "string") return hasId ? "request" : m.id === undefined ? "notification" : "invalid";
  if (hasId || m.id === null) return "result" in m || "error" in m ? "response" : "invalid";
  return "invalid";
}

const jsonWithRaw = JSON as typeof JSON & { isRawJSON?(value: unknown): boolean };

/** An integer beyond 2^53 kept as raw JSON by the parser (json-text.ts), so it keeps its digits. */
function isExactInteger(value: unknown): boolean {
  return typeof value === "object" && value !== null && jsonWithRaw.isRawJSON?.(value) === true;
}

export function errorResponse(id: JsonRpcId, code: number, message: string): JsonRpcMessage {
  return { jsonrpc: "2.0", id, error: { code, message } };
}

export function progressTokenOf(message: JsonRpcMessage): string | number | undefined {
  const token = message.params?._meta?.progressToken;
  return typeof token === "string" || typeof token === "number" ? token : undefined;
}

/** Protocol versions the bridge speaks with clients, oldest first. */
const supportedProtocolVersions = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"] as const;
export const latestProtocolVersion = "2025-11-25";

export function isSupportedProtocolVersion(version: string): boolean {
  return (supportedProtocolVersions as readonly string[]).includes(version);
}

/** Batches were allowed only by 2025-03-26 (and tolerated by 2024-11-05). */
export function allowsBatches(version: string): boolean {
  return version === "2025-03-26" || version === "2024-11-05";
}

/** RFC 5424 severities as MCP orders them, lowest first. */
const levels = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] as const;
export type LogLevel = (typeof levels)[number];

export function logLevelRank(level: unknown): number {
  const rank = levels.indexOf(level as LogLevel);
  return rank === -1 ? 0 : rank;
}

export function isLogLevel(level: unknown): level is LogLevel {
  return levels.includes(level as LogLevel);
}
