/**
 * The URL MCP clients use for an endpoint served on a bind address. A wildcard address
 * (0.0.0.0, ::) is where the proxy listens, not a host anyone can connect to: the loopback
 * of the same family stands in for it.
 */
export function clientUrl(host: string, port: number, path: string): string {
  const bare = host.replace(/^\[(.*)\]$/, "$1");
  const reachable = bare === "0.0.0.0" ? "127.0.0.1" : bare === "::" ? "::1" : bare;
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}${path}`;
}
