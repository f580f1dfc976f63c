/**
 * The fetch for mcpmgr's own HTTPS requests with `--thv-ca-bundle`: the bundle's CAs are
 * trusted in addition to the usual roots. Bun's `tls.ca` replaces the trusted roots rather
 * than adding to them, so the default roots are passed along; otherwise giving a bundle for
 * a private issuer would break every publicly certified endpoint.
 */
import { readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";

export type Fetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

export function trustingFetch(caBundle: string | undefined, base: Fetch = fetch): Fetch {
  if (caBundle === undefined) return base;
  const ca = [...rootCertificates, ...extraCaCerts(), caBundle];
  return (input, init = {}) =>
    base(input, { ...init, tls: { ...(init as BunFetchRequestInit).tls, ca } } as RequestInit);
}

/** NODE_EXTRA_CA_CERTS, which a tls.ca list would otherwise leave out; ignored when unreadable, as the runtime does. */
function extraCaCerts(): string[] {
  const path = process.env.NODE_EXTRA_CA_CERTS;
  if (!path) return [];
  try {
    return [readFileSync(path, "utf8")];
  } catch {
    return [];
  }
}
