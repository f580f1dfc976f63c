/**
 * The one JSON-RPC 2.0 message type, for the bridge and the policies alike, and what an MCP
 * request acts on. Messages come from clients and servers: a field's presence and type are
 * checked where it is used, never assumed from this type.
 */
import type { JsonRpcId } from "./jsonrpc.ts";

export interface JsonRpcMessage {
  jsonrpc: "2.0";
  id?: JsonRpcId;
  method?: string;
  params?: Record<string, unknown> & { _meta?: Record<string, unknown> };
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/** A request mcpmgr sends or relays: a message with a method and an id (never null on a request). */
export type JsonRpcRequest = JsonRpcMessage & { readonly id: string | number; readonly method: string };

/** The tool, prompt or resource a request names: what policies decide on and audit records. */
export interface McpTarget {
  readonly kind: "tool" | "prompt" | "resource";
  /** The tool's or prompt's name, or the resource's URI. */
  readonly name: string;
}

/**
 * Methods that name a target, and the parameter that names it (the value a 2026-07-28 client
 * mirrors in its `Mcp-Name` header). Subscribing to a resource targets it as reading does.
 */
const targets: ReadonlyMap<string, { readonly kind: McpTarget["kind"]; readonly key: "name" | "uri" }> = new Map([
  ["tools/call", { kind: "tool", key: "name" }],
  ["prompts/get", { kind: "prompt", key: "name" }],
  ["resources/read", { kind: "resource", key: "uri" }],
  ["resources/subscribe", { kind: "resource", key: "uri" }],
  ["resources/unsubscribe", { kind: "resource", key: "uri" }],
]);

/** undefined for methods that name no target, and for requests whose target parameter is not a string. */
export function targetOf(message: { readonly method?: unknown; readonly params?: unknown }): McpTarget | undefined {
  const rule = typeof message.method === "string" ? targets.get(message.method) : undefined;
  if (rule === undefined || typeof message.params !== "object" || message.params === null) return undefined;
  const name = (message.params as Record<string, unknown>)[rule.key];
  return typeof name === "string" ? { kind: rule.kind, name } : undefined;
}

/**
 * A dated revision from 2026-07-28 on, known or not: its requests carry their own context in
 * `_meta` and never belong to a session, whatever `Mcp-Session-Id` they carry (2026-07-28 says
 * to ignore that header, and a dual-era server serves a modern request statelessly).
 */
export function namesPerRequestRevision(version: string | null): boolean {
  return version !== null && /^\d{4}-\d{2}-\d{2}$/.test(version) && version >= "2026-07-28";
}
