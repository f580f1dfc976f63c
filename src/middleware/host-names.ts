/**
 * The names a listener answers to: what `Host` may say (DNS-rebinding protection). A page on
 * `rebind.attacker.example` whose DNS answer is switched to this machine's address makes the
 * browser send `Host: rebind.attacker.example`, and its `Origin` matches; so a name passes only
 * when the attacker cannot choose it:
 *   - an IP address (a rebinding needs a name; a page served from an address is sent to that address);
 *   - a loopback name (`localhost`, `*.localhost`: browsers resolve them to loopback themselves);
 *   - this machine's own name (`os.hostname()`, its first label, and that label's `.local` form:
 *     a `.local` name is answered by multicast DNS on the local network, never by the attacker's server);
 *   - a name given with `--allowed-hosts` (a leading dot: the domain and its subdomains).
 * A listener on loopback keeps its stricter rule: loopback names, or a name the user allowed.
 * A trusted X-Forwarded-Host that an answer will name as a URL (listenerNames) is held to the same
 * rule narrowed: an address passes only if it is one of this machine's.
 */
import { isIP } from "node:net";
import { hostname } from "node:os";
import { normalizeHostName } from "../config/allowed-hosts.ts";
import { ipSpelling, machineAddresses } from "../config/ip-address.ts";

const loopbackNames: ReadonlySet<string> = new Set(["localhost", "127.0.0.1", "::1", "[::1]"]);

export function isLoopbackHost(host: string): boolean {
  const name = host.toLowerCase();
  return loopbackNames.has(name) || name.endsWith(".localhost") || /^127(\.\d{1,3}){3}$/.test(name);
}

/** "example.com:8080" → "example.com", "[::1]:80" → "[::1]". */
export function hostnameOf(hostHeader: string): string {
  if (hostHeader.startsWith("[")) return hostHeader.slice(0, hostHeader.indexOf("]") + 1);
  const colon = hostHeader.lastIndexOf(":");
  return colon === -1 ? hostHeader : hostHeader.slice(0, colon);
}

/** This machine's names, as hostnames() of node:os gives them and multicast DNS announces them. */
export function machineNames(name = hostname()): string[] {
  const full = normalizeHostName(name);
  if (full === "" || isIP(full) !== 0) return [];
  const first = full.split(".")[0] as string;
  return [...new Set([full, first, `${first}.local`])];
}

export interface HostNamePolicy {
  /** Whether a request whose `Host` header (port included) is `hostHeader` may be served. */
  answersTo(hostHeader: string): boolean;
  /** Whether the user named it (`--allowed-hosts`): the only non-loopback names a loopback listener answers to. */
  userAllowed(hostHeader: string): boolean;
}

export interface HostNameOptions {
  /** The listener is bound beyond loopback (`--host 0.0.0.0`, a LAN address). */
  readonly beyondLoopback: boolean;
  /** `--allowed-hosts`, normalized (config/allowed-hosts.ts): names, and `.domain` for a domain with its subdomains. */
  readonly allowed: readonly string[];
  /** This machine's names (default: machineNames()). */
  readonly machine?: readonly string[];
  /**
   * When given, the only IP addresses answered to beyond loopback: this machine's (machineAddresses()).
   * For a forwarded host (listenerNames), not for `Host`: a client's `Host` holds whatever address it
   * reached (a NAT's, a container port's), and any address is safe there, as a rebinding needs a name.
   */
  readonly addresses?: readonly string[];
}

export function hostNamePolicy(options: HostNameOptions): HostNamePolicy {
  const exact = new Set(options.allowed.filter((name) => !name.startsWith(".")));
  const domains = options.allowed.filter((name) => name.startsWith("."));
  const userAllowed = (name: string): boolean =>
    exact.has(name) || domains.some((domain) => name.endsWith(domain) || name === domain.slice(1));
  const own = new Set(options.beyondLoopback ? (options.machine ?? machineNames()) : []);
  const addresses = options.addresses === undefined ? undefined : new Set(options.addresses);
  const addressAllowed = (name: string): boolean => {
    if (addresses === undefined) return isIP(name) !== 0;
    const address = ipSpelling(name);
    return address !== undefined && addresses.has(address);
  };
  return {
    answersTo(hostHeader) {
      const name = normalizeHostName(hostnameOf(hostHeader));
      if (isLoopbackHost(name) || userAllowed(name)) return true;
      return options.beyondLoopback && (own.has(name) || addressAllowed(name));
    },
    userAllowed: (hostHeader) => userAllowed(normalizeHostName(hostnameOf(hostHeader))),
  };
}

/**
 * The names of a listener on `listenHost` that a trusted X-Forwarded-Host may be for the URLs an
 * answer names (the RFC 9728 resource, the legacy SSE `endpoint` event, a redirect) to follow it:
 * the `Host` rule, but beyond loopback an address only if it is this machine's (taken at start). A
 * reverse proxy that passes a client's header on would otherwise let that client name any address
 * (`203.0.113.7`) as where the resource is: no rebinding, but a resource that is not this machine's.
 */
export function listenerNames(
  listenHost: string,
  allowedHosts: readonly string[],
  addresses: readonly string[] = machineAddresses(),
): HostNamePolicy {
  return hostNamePolicy({ beyondLoopback: !isLoopbackHost(listenHost), allowed: allowedHosts, addresses });
}

/** `listenerNames` as the check a forwarder's `answersTo` takes; undefined when forwarded headers are not trusted. */
export function forwardedNames(
  trustProxyHeaders: boolean,
  listenHost: string,
  allowedHosts: readonly string[],
): ((host: string) => boolean) | undefined {
  return trustProxyHeaders ? listenerNames(listenHost, allowedHosts).answersTo : undefined;
}
