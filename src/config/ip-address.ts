/**
 * node:net's isIP, loaded on first use: importing node:net brings Node's stream machinery
 * along, a cost every command would pay at start-up although few ever check an address.
 * Callers test the cheap host-name pattern first, so the embedded registry (host names
 * only) never gets here.
 */
export function ipVersion(text: string): number {
  return (require("node:net") as typeof import("node:net")).isIP(text);
}
