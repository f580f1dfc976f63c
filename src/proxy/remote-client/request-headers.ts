/**
 * The HTTP headers an MCP 2026-07-28 client puts on every Streamable HTTP POST, mirrored from
 * the JSON-RPC body so intermediaries can route without parsing it: MCP-Protocol-Version
 * (equal to the body's `_meta` protocol version), Mcp-Method, Mcp-Name for the methods that
 * name a tool, prompt or resource, and Mcp-Param-{Name} for tool arguments the tool's schema
 * marks with `x-mcp-header`. Values a header cannot carry as they are go Base64-encoded in
 * the `=?base64?…?=` form the revision defines.
 */
import { argumentAt, argumentText, type HeaderDeclaration } from "../tool-headers.ts";

const PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion";

/** Revisions with the initialize handshake; any later dated revision is per-request ("modern"). */
const handshakeRevisions = new Set(["2024-10-07", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]);

export function isModernRevision(version: string): boolean {
  return /^\d{4}-\d{2}-\d{2}$/.test(version) && !handshakeRevisions.has(version) && version >= "2026-07-28";
}

interface RequestLike {
  readonly method: string;
  readonly params?: unknown;
}

function field(value: unknown, key: string): unknown {
  return value !== null && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined;
}

/** The protocol version a request declares in its `_meta`, when it is a per-request (2026-07-28+) one. */
export function modernVersionOf(message: RequestLike): string | undefined {
  const version = field(field(message.params, "_meta"), PROTOCOL_VERSION_META);
  return typeof version === "string" && isModernRevision(version) ? version : undefined;
}

const SENTINEL_PREFIX = "=?base64?";
const SENTINEL_SUFFIX = "?=";

/**
 * A value as a header carries it: as it is when it is plain visible ASCII (space and tab
 * inside allowed), else Base64 of its UTF-8 in the sentinel form — also for an empty value,
 * for leading or trailing whitespace (header parsing strips it), and for a value that looks
 * like the sentinel itself.
 */
export function headerValue(text: string): string {
  const plain =
    text !== "" &&
    text === text.trim() &&
    /^[\x20-\x7e\t]*$/.test(text) &&
    !(text.startsWith(SENTINEL_PREFIX) && text.endsWith(SENTINEL_SUFFIX));
  return plain ? text : `${SENTINEL_PREFIX}${Buffer.from(text, "utf8").toString("base64")}${SENTINEL_SUFFIX}`;
}

/** The headers a 2026-07-28 request needs, from its body (and the tool's header declarations for tools/call). */
export function mcpRequestHeaders(
  message: RequestLike,
  version: string,
  declarations: readonly HeaderDeclaration[] = [],
): Record<string, string> {
  const headers: Record<string, string> = { "mcp-protocol-version": version, "mcp-method": message.method };
  const name =
    message.method === "tools/call" || message.method === "prompts/get"
      ? field(message.params, "name")
      : message.method === "resources/read"
        ? field(message.params, "uri")
        : undefined;
  if (typeof name === "string") headers["mcp-name"] = headerValue(name);
  if (message.method === "tools/call") {
    const args = field(message.params, "arguments");
    for (const declaration of declarations) {
      // A value that is null or absent gets no header (the revision's "MUST omit").
      const text = argumentText(argumentAt(args, declaration.path));
      if (text !== undefined) headers[`mcp-param-${declaration.header.toLowerCase()}`] = headerValue(text);
    }
  }
  return headers;
}
