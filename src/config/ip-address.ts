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
