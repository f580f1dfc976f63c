/**
 * `Mcp-Param-{Name}` headers checked at the gateway (MCP 2026-07-28, Streamable HTTP "custom
 * headers from tool parameters"). A 2026-07-28 client mirrors the arguments a tool's input
 * schema marks with `x-mcp-header` into headers, so that whatever routes the request can do so
 * without reading the body; the server that executes the call must refuse one whose headers are
 * missing, malformed or disagree with the body (400, -32020 HeaderMismatch). The gateway is that
 * server for its clients (its members never see the client's headers), and it knows the merged
 * tool list its clients called from, so it checks every 2026-07-28 tools/call against the
 * declarations of the tool as listed — in search mode, against find_tool and call_tool, the only
 * tools its clients list. A tool whose declarations break the rules is not listed at all
 * (merged-view.ts), so it has none to check. The headers it carries on to a member reached as a
 * 2026-07-28 server go with every call, whatever the caller's revision (gateway-server.ts).
 */
import {
  checkParamHeaders,
  type HeaderDeclaration,
  type ParamHeaderRefusal,
  scanToolHeaders,
} from "../proxy/tool-headers.ts";
import { mcpRequestHeaders } from "../proxy/remote-client/request-headers.ts";

interface ListedTool {
  readonly name?: unknown;
  readonly inputSchema?: unknown;
}

/** Per tool list the clients see (a new array whenever it changes): each tool's declarations, by name. */
const byList = new WeakMap<readonly unknown[], ReadonlyMap<string, readonly HeaderDeclaration[]>>();

function declarationsByName(tools: readonly unknown[]): ReadonlyMap<string, readonly HeaderDeclaration[]> {
  let known = byList.get(tools);
  if (known === undefined) {
    const map = new Map<string, readonly HeaderDeclaration[]>();
    for (const tool of tools as readonly ListedTool[]) {
      if (typeof tool?.name !== "string") continue;
      const scan = scanToolHeaders(tool.inputSchema);
      if (scan.valid && scan.declarations.length > 0) map.set(tool.name, scan.declarations);
    }
    known = map;
    byList.set(tools, known);
  }
  return known;
}

/**
 * Why a tools/call (`params` as the client sent them) must be refused for its `Mcp-Param-*`
 * headers, given the tool list the client sees; undefined when its headers agree (or its tool
 * declares none, or is not listed: routing answers that).
 */
export function paramHeaderRefusal(
  headers: Headers,
  params: unknown,
  tools: readonly unknown[],
): ParamHeaderRefusal | undefined {
  const { name, arguments: args } = (params ?? {}) as { name?: unknown; arguments?: unknown };
  if (typeof name !== "string") return undefined;
  const declarations = declarationsByName(tools).get(name);
  return declarations === undefined ? undefined : checkParamHeaders(headers, args, declarations);
}

/**
 * The `Mcp-Param-*` headers a tools/call (`params` with the gateway's tool name, as the client sent
 * them) carries on to a member reached as a 2026-07-28 server: the member checks them as the gateway
 * did, and its declarations are the ones the gateway lists. Empty when the tool declares none.
 */
export function memberParamHeaders(params: unknown, tools: readonly unknown[]): Record<string, string> {
  const { name } = (params ?? {}) as { name?: unknown };
  const declarations = typeof name === "string" ? declarationsByName(tools).get(name) : undefined;
  if (declarations === undefined) return {};
  const headers: Record<string, string> = {};
  const all = mcpRequestHeaders({ method: "tools/call", params }, "", declarations);
  for (const [header, value] of Object.entries(all)) if (header.startsWith("mcp-param-")) headers[header] = value;
  return headers;
}
