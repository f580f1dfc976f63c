/**
 * The MCP 2026-07-28 request envelope as a server checks it at the edge: every request
 * carries its protocol version and client capabilities in `_meta` (no session, no
 * initialize), mirrors its method and target in `Mcp-Method` / `Mcp-Name` headers, and is
 * refused with the specified code and HTTP status when any of that is wrong. The bridge
 * runs these checks itself whatever revision the stdio server speaks: the server never
 * sees the HTTP headers, so only the bridge can compare them with the body.
 */
import { JsonRpcCode } from "../jsonrpc.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import { isLogLevel, type LogLevel } from "./messages.ts";
import type { ClientCapabilities } from "./session.ts";

export const modernProtocolVersion = "2026-07-28";
export const modernProtocolVersions: readonly string[] = [modernProtocolVersion];

export const metaKey = {
  protocolVersion: "io.modelcontextprotocol/protocolVersion",
  clientInfo: "io.modelcontextprotocol/clientInfo",
  clientCapabilities: "io.modelcontextprotocol/clientCapabilities",
  logLevel: "io.modelcontextprotocol/logLevel",
  serverInfo: "io.modelcontextprotocol/serverInfo",
  subscriptionId: "io.modelcontextprotocol/subscriptionId",
} as const;

/** Error codes the 2026-07-28 revision defines. */
export const ModernCode = {
  headerMismatch: -32020,
  missingRequiredClientCapability: -32021,
  unsupportedProtocolVersion: -32022,
} as const;

/** Methods a 2026-07-28 client may no longer call (the handshake, sessions' utilities). */
const removedMethods: ReadonlySet<string> = new Set([
  "initialize",
  "ping",
  "logging/setLevel",
  "resources/subscribe",
  "resources/unsubscribe",
]);

export function isRemovedMethod(method: string): boolean {
  return removedMethods.has(method);
}

/** Requests whose answer may be an InputRequiredResult (multi-round-trip requests). */
export function mayRequireInput(method: string): boolean {
  return method === "tools/call" || method === "prompts/get" || method === "resources/read";
}

/** Results that carry caching hints (ttlMs, cacheScope). */
export function isCacheable(method: string): boolean {
  return (
    method === "server/discover" ||
    method === "tools/list" ||
    method === "prompts/list" ||
    method === "resources/list" ||
    method === "resources/templates/list" ||
    method === "resources/read"
  );
}

/** A refusal at the edge: the JSON-RPC error and the HTTP status it goes with. */
export interface EdgeRefusal {
  readonly status: number;
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

/** What a valid modern request tells the bridge about its client. */
export interface ModernEnvelope {
  readonly protocolVersion: string;
  readonly capabilities: ClientCapabilities;
  readonly logLevel: LogLevel | undefined;
}

/** Where the target of a request is named in `Mcp-Name`. */
const targetKey: Readonly<Record<string, string>> = {
  "tools/call": "name",
  "prompts/get": "name",
  "resources/read": "uri",
};

/** `Mcp-Name` values outside plain ASCII travel as `=?base64?…?=`. */
function decodeHeaderValue(value: string): string | undefined {
  const encoded = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/.exec(value);
  if (!encoded) return value;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(encoded[1] as string, "base64"));
  } catch {
    return undefined;
  }
}

/**
 * Checks a modern request's headers and `_meta` (in the order the revision gives: the
 * headers must mirror the body, the envelope must be complete, the version supported).
 * `supported` lists the modern versions this endpoint serves.
 */
export function checkModernRequest(
  headers: Headers,
  message: JsonRpcMessage,
  supported: readonly string[],
): EdgeRefusal | ModernEnvelope {
  const method = message.method as string;
  const mismatch = (why: string): EdgeRefusal => ({
    status: 400,
    code: ModernCode.headerMismatch,
    message: `Header mismatch: ${why}`,
  });
  const headerMethod = headers.get("mcp-method");
  if (headerMethod === null) return mismatch("the Mcp-Method header is required");
  if (headerMethod !== method) return mismatch(`Mcp-Method '${headerMethod}' does not match the body's '${method}'`);
  const key = targetKey[method];
  if (key !== undefined) {
    const raw = headers.get("mcp-name");
    if (raw === null) return mismatch(`the Mcp-Name header is required for ${method}`);
    const name = decodeHeaderValue(raw);
    if (name === undefined || name !== message.params?.[key])
      return mismatch(`Mcp-Name '${raw}' does not match the body's params.${key}`);
  }
  const meta = message.params?._meta;
  const version = meta?.[metaKey.protocolVersion];
  const capabilities = meta?.[metaKey.clientCapabilities];
  if (typeof version !== "string" || typeof capabilities !== "object" || capabilities === null)
    return {
      status: 400,
      code: JsonRpcCode.invalidParams,
      message: `Invalid params: _meta must carry ${metaKey.protocolVersion} and ${metaKey.clientCapabilities}`,
    };
  const headerVersion = headers.get("mcp-protocol-version");
  if (headerVersion !== version)
    return mismatch(`MCP-Protocol-Version '${headerVersion ?? ""}' does not match _meta's '${version}'`);
  if (!supported.includes(version))
    return {
      status: 400,
      code: ModernCode.unsupportedProtocolVersion,
      message: "Unsupported protocol version",
      data: { supported, requested: version },
    };
  const level = meta?.[metaKey.logLevel];
  if (level !== undefined && !isLogLevel(level))
    return {
      status: 400,
      code: JsonRpcCode.invalidParams,
      message: `Invalid params: ${metaKey.logLevel} must be an RFC 5424 level name`,
    };
  return { protocolVersion: version, capabilities: capabilities as ClientCapabilities, logLevel: level };
}

/**
 * The HTTP status for an error a modern client gets as the whole answer: the revision
 * fixes 404 for an unknown method and 400 for its envelope errors; other errors are the
 * answer itself (200).
 */
export function statusOfModernError(code: number): number {
  if (code === JsonRpcCode.methodNotFound) return 404;
  if (
    code === ModernCode.headerMismatch ||
    code === ModernCode.missingRequiredClientCapability ||
    code === ModernCode.unsupportedProtocolVersion ||
    code === JsonRpcCode.parseError ||
    code === JsonRpcCode.invalidRequest
  )
    return 400;
  return 200;
}
