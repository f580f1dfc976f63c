/**
 * The parts of a 2026-07-28 request sent by hand (fetch, not the SDK's transport): no session,
 * the revision, method and target in the Mcp-* headers, the client's revision and capabilities
 * in `_meta`. A test of a mismatch overrides the header or field it is about.
 */

/** The headers of a 2026-07-28 POST for `method` and, for tools/call, the tool `name`. */
export function statelessHeaders(method?: string, name?: string): Record<string, string> {
  return {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    ...(method === undefined ? {} : { "mcp-method": method }),
    ...(name === undefined ? {} : { "mcp-name": name }),
  };
}

/** The `_meta` envelope of a 2026-07-28 request, with the client's capabilities and, if given, its name. */
export function statelessMeta(
  capabilities: Record<string, unknown> = {},
  clientInfo?: { name: string; version: string },
): Record<string, unknown> {
  return {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    ...(clientInfo === undefined ? {} : { "io.modelcontextprotocol/clientInfo": clientInfo }),
    "io.modelcontextprotocol/clientCapabilities": capabilities,
  };
}
