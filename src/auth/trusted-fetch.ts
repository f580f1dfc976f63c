/**
 * The fetch for mcpmgr's own HTTPS requests with `--thv-ca-bundle`: the bundle's CAs are
 * trusted in addition to the usual roots (the list as ../trusted-cas.ts makes it, which says
 * why the default roots must be passed along).
 */
import { trustedCasWith } from "../trusted-cas.ts";

export type Fetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

export function trustingFetch(caBundle: string | undefined, base: Fetch = fetch): Fetch {
  if (caBundle === undefined) return base;
  const ca = trustedCasWith(caBundle);
  return (input, init = {}) =>
    base(input, { ...init, tls: { ...(init as BunFetchRequestInit).tls, ca } } as RequestInit);
}
