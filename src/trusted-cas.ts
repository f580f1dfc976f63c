/**
 * The CAs to trust when a CA bundle is given (`--thv-ca-bundle`, the upstream client's `ca`): the
 * bundle in addition to the usual ones. Bun's `tls.ca` replaces the trusted roots rather than adding to
 * them, so the default roots and NODE_EXTRA_CA_CERTS (which such a list would otherwise leave out)
 * come along; otherwise a bundle for a private issuer would break every publicly certified endpoint.
 * Shared by mcpmgr's own requests (auth/trusted-fetch.ts) and the forwarder's client (proxy/upstream/).
 */
import { readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";

export function trustedCasWith(
  bundle: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  return [...rootCertificates, ...extraCaCerts(env), bundle];
}

/** NODE_EXTRA_CA_CERTS's certificates; none when it is unreadable, as the runtime does. */
function extraCaCerts(env: Readonly<Record<string, string | undefined>>): string[] {
  const path = env.NODE_EXTRA_CA_CERTS;
  if (!path) return [];
  try {
    return [readFileSync(path, "utf8")];
  } catch {
    return [];
  }
}
