/**
 * How MCP clients reach a workload: the proxy's URL and the transport it speaks there. The
 * proxy forwards an HTTP server's own transport as it is and exposes a stdio server as
 * --proxy-mode says; a remote workload keeps the remote's streamable HTTP.
 */
import type { WorkloadRecord } from "./workload-record.ts";

export function workloadUrl(record: WorkloadRecord): string {
  // A wildcard bind is not an address to connect to; an IPv6 host needs brackets in a URL.
  const host = record.host === "0.0.0.0" ? "127.0.0.1" : record.host.includes(":") ? `[${record.host}]` : record.host;
  return `http://${host}:${record.proxyPort}${record.proxyPath}`;
}

export function clientTransport(record: WorkloadRecord): "streamable-http" | "sse" {
  return record.transport === "stdio" ? record.proxyMode : record.transport;
}
