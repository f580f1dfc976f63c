/**
 * node:net's isIP, loaded on first use: importing node:net brings Node's stream machinery
 * along, a cost every command would pay at start-up although few ever check an address.
 * Callers test the cheap host-name pattern first, so the embedded registry (host names
 * only) never gets here.
 */
export function ipVersion(text: string): number {
  return (require("node:net") as typeof import("node:net")).isIP(text);
}

/**
 * An IPv6 address as the URL parser writes it (compressed, lower case, an IPv4 tail in hex), without
 * brackets, so that two spellings of one address compare equal; undefined for anything that is not one.
 */
export function ipv6Spelling(address: string): string | undefined {
  const url = `http://[${address}]/`;
  return URL.canParse(url) ? new URL(url).hostname.slice(1, -1) : undefined;
}

/**
 * An IP address in one spelling (`FE80:0::1`, `fe80::1` → `fe80::1`; IPv4 as written), to compare
 * with this machine's; undefined for anything that is not one.
 */
export function ipSpelling(name: string): string | undefined {
  const kind = ipVersion(name);
  if (kind === 4) return name;
  return kind === 6 ? ipv6Spelling(name) : undefined;
}

/**
 * This machine's addresses (every interface's, scope ids aside), in ipSpelling's spelling: what a
 * forwarded host may name beyond loopback, and what reaches a workload bound to a wildcard address.
 */
export function machineAddresses(): string[] {
  const { networkInterfaces } = require("node:os") as typeof import("node:os");
  const found: string[] = [];
  for (const entries of Object.values(networkInterfaces()))
    for (const entry of entries ?? []) {
      const address = ipSpelling(entry.address.toLowerCase());
      if (address !== undefined) found.push(address);
    }
  return found;
}
