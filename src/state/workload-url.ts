/**
 * How MCP clients reach an endpoint mcpmgr serves: the URL of a bind address (the proxy of a
 * workload, `mcpmgr proxy`, a gateway) and, for a recorded workload, the transport it speaks
 * there. The proxy forwards an HTTP server's own transport as it is and exposes a stdio
 * server as --proxy-mode says; a remote workload keeps the remote's streamable HTTP. One
 * place, so `list`, `run`, `start` and AI-client configuration show the same URL.
 */
import { isLoopbackHostname, listenAddress } from "../config/loopback.ts";
import type { WorkloadRecord } from "./workload-record.ts";

/**
 * The URL for an endpoint served on a bind address. A wildcard address (0.0.0.0, ::) is
 * where the proxy listens, not a host anyone can connect to: the loopback of the same
 * family stands in for it. `localhost` is named by the address it is bound as (a record written
 * before it was, too), so no client tries the other loopback first. An IPv6 host gets its brackets.
 */
export function clientUrl(host: string, port: number, path: string): string {
  const bare = listenAddress(host.replace(/^\[(.*)\]$/, "$1"));
  const reachable = bare === "0.0.0.0" ? "127.0.0.1" : bare === "::" ? "::1" : bare;
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}${path}`;
}

export function workloadUrl(record: WorkloadRecord): string {
  return clientUrl(record.host, record.proxyPort, record.proxyPath);
}

export function clientTransport(record: WorkloadRecord): "streamable-http" | "sse" {
  return record.transport === "stdio" ? record.proxyMode : record.transport;
}

/**
 * Whether `url` reaches the listener the workload's proxy holds (its address and port), however it is
 * written: `localhost` for 127.0.0.1 or ::1, any loopback address for a workload bound to a wildcard
 * address, any path (the whole port is the workload's proxy: every path there goes through its chain, a
 * guarded member's refusal included), with or without a trailing slash. A workload serves plain http only.
 */
export function reachesWorkload(record: WorkloadRecord, url: URL): boolean {
  if (url.protocol !== "http:" || Number(url.port || "80") !== record.proxyPort) return false;
  const asked = url.hostname.toLowerCase();
  // 127.0.0.1 or [::1] for a wildcard or localhost binding (clientUrl), the address itself otherwise.
  const served = new URL(workloadUrl(record)).hostname;
  if (asked === served) return true;
  if (asked === "localhost") return isLoopbackHostname(served);
  const bound = record.host.replace(/^\[(.*)\]$/, "$1");
  // A wildcard binding answers on every loopback address of its family (`::` on IPv4's too, dual-stack).
  if (bound === "0.0.0.0") return isLoopbackHostname(asked) && !asked.includes(":");
  return bound === "::" && isLoopbackHostname(asked);
}
