/**
 * The fetch used for the authorization server's documents (discovery, JWKS, introspection):
 * https only unless --oidc-insecure-allow-http; never a private, loopback or link-local
 * address unless --jwks-allow-private-ip (a token validator that follows attacker-chosen
 * URLs into the internal network is an SSRF); the optional bearer token and CA bundle.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import type { IncomingAuthSpec } from "../../config/incoming-auth-spec.ts";
import { McpmgrError } from "../../errors.ts";

/** Loopback, RFC 1918, CGNAT, link-local, "this network", unique-local and mapped forms. */
export function isPrivateAddress(address: string): boolean {
  if (isIP(address) === 4) {
    const [a = 0, b = 0] = address.split(".").map(Number);
    return a === 10 || a === 127 || a === 0 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254) || (a === 100 && b >= 64 && b <= 127);
  }
  const lower = address.toLowerCase();
  if (lower.startsWith("::ffff:")) return isPrivateAddress(lower.slice(7));
  return lower === "::1" || lower === "::" || /^f[cd][0-9a-f]{2}:/.test(lower) || /^fe[89ab][0-9a-f]:/.test(lower);
}

export type Fetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

export function guardedFetch(spec: Pick<IncomingAuthSpec, "allowHttp" | "allowPrivateIp" | "fetchToken" | "caBundle">, base: Fetch = fetch): Fetch {
  return async (input, init = {}) => {
    const url = new URL(input instanceof URL ? input.href : input);
    if (url.protocol !== "https:" && !(url.protocol === "http:" && spec.allowHttp)) {
      throw new McpmgrError("AUTH_SETUP_FAILED", `refusing ${url.href}: only https:// is allowed for token validation`, { hint: "use https://, or --oidc-insecure-allow-http for local development" });
    }
    if (!spec.allowPrivateIp) {
      const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
      const addresses = isIP(host) !== 0 ? [host] : (await lookup(host, { all: true }).catch(() => [])).map((a) => a.address);
      const inside = addresses.find(isPrivateAddress);
      if (inside !== undefined) {
        throw new McpmgrError("AUTH_SETUP_FAILED", `refusing ${url.href}: ${host} is a private address (${inside})`, { hint: "pass --jwks-allow-private-ip if the authorization server really is on a private network" });
      }
    }
    const headers = new Headers(init.headers);
    if (spec.fetchToken !== undefined && !headers.has("authorization")) headers.set("authorization", `Bearer ${spec.fetchToken}`);
    return base(url, { ...init, headers, redirect: "manual", ...(spec.caBundle ? { tls: { ca: spec.caBundle } } : {}) } as RequestInit);
  };
}
