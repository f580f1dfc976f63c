/**
 * How MCP clients reach an endpoint mcpmgr serves: the URL of a bind address (the proxy of a
 * workload, `mcpmgr proxy`, a gateway) and, for a recorded workload, the transport it speaks
 * there. The proxy forwards an HTTP server's own transport as it is and exposes a stdio
 * server as --proxy-mode says; a remote workload keeps the remote's streamable HTTP. One
 * place, so `list`, `run`, `start` and AI-client configuration show the same URL.
 */
import { ipv6Spelling } from "../config/ip-address.ts";
import { isLoopbackHostname, listenAddress, loopbackNameAddress } from "../config/loopback.ts";
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
 * written: `localhost` (its other spellings and the names below it too) for 127.0.0.1 or ::1, `ip6-localhost`
 * for ::1 (config/loopback.ts loopbackNameAddress); an address the connection is made to in another spelling
 * (0.0.0.0 and `::` connect to the loopback on Linux, `::ffff:127.0.0.1` to 127.0.0.1); for a workload
 * bound to a wildcard address, any loopback address of its family and any of `localAddresses` (this
 * machine's interfaces: a LAN address reaches it as well); any path (the whole port is the workload's
 * proxy: every path there goes through its chain, a guarded member's refusal included), with or without
 * a trailing slash. A workload serves plain http only.
 */
export function reachesWorkload(
  record: Pick<WorkloadRecord, "host" | "proxyPort" | "proxyPath">,
  url: URL,
  localAddresses: ReadonlySet<string> = new Set(),
): boolean {
  if (url.protocol !== "http:" || Number(url.port || "80") !== record.proxyPort) return false;
  const asked = url.hostname.toLowerCase();
  // 127.0.0.1 or [::1] for a wildcard or localhost binding (clientUrl), the address itself otherwise.
  const served = new URL(clientUrl(record.host, record.proxyPort, record.proxyPath)).hostname;
  if (asked === served) return true;
  // Every name --host binds as an address (`localhost.`, `a.localhost`, `ip6-localhost`) is that address
  // here too; `localhost` and the names below it may resolve to either loopback, as a client's resolver picks.
  const named = loopbackNameAddress(asked);
  if (named === "127.0.0.1") return isLoopbackHostname(served);
  const reached = named ?? connectedAddress(asked);
  const bound = canonicalAddress(listenAddress(record.host.replace(/^\[(.*)\]$/, "$1")));
  const local = isLoopbackHostname(reached) || [...localAddresses].some((a) => canonicalAddress(a) === reached);
  // A wildcard binding answers on every address of its family (`::` on IPv4's too, dual-stack).
  if (bound === "0.0.0.0") return local && !reached.includes(":");
  if (bound === "::") return local;
  return reached === bound;
}

/** An address as the URL parser writes it (IPv6 compressed, lower case), without brackets. */
function canonicalAddress(address: string): string {
  return (address.includes(":") ? ipv6Spelling(address) : undefined) ?? address.toLowerCase();
}

/**
 * The address a connection to a URL's hostname is made to: an IPv4-mapped IPv6 address is its IPv4
 * address (the kernel connects to it over IPv4), and the unspecified addresses connect to the loopback.
 */
function connectedAddress(hostname: string): string {
  const bare = hostname.replace(/^\[(.*)\]$/, "$1");
  // The URL parser writes ::ffff:127.0.0.1 as ::ffff:7f00:1.
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(bare);
  if (mapped !== null) {
    const high = Number.parseInt(mapped[1] ?? "0", 16);
    const low = Number.parseInt(mapped[2] ?? "0", 16);
    return connectedAddress(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`);
  }
  if (bare === "0.0.0.0") return "127.0.0.1";
  if (bare === "::") return "::1";
  return bare;
}
