/**
 * The fetch used for the authorization server's documents (discovery, JWKS, introspection):
 * https only unless --oidc-insecure-allow-http; never a private, loopback or link-local
 * address unless --jwks-allow-private-ip (a token validator that follows attacker-chosen
 * URLs into the internal network is an SSRF); the optional bearer token and CA bundle; answers
 * capped (capped-fetch.ts).
 *
 * The bearer token (--jwks-auth-token-file) goes only to the issuer's origin and to the origins of
 * the URLs the user gave (--oidc-jwks-url, --oidc-introspection-url): a `jwks_uri` the discovery
 * document names on another host (a public bucket holding a Kubernetes issuer's keys, a CDN) is
 * fetched without it. That token is a credential for the issuer (often a service account's), and
 * a host the document chose is no more the issuer than any other.
 */
import { resolvesInside } from "../addresses.ts";
import type { IncomingAuthSpec } from "../../config/incoming-auth-spec.ts";
import { McpmgrError } from "../../errors.ts";
import { cappedAnswers } from "../capped-fetch.ts";
import { trustingFetch, type Fetch } from "../trusted-fetch.ts";

export type { Fetch } from "../trusted-fetch.ts";

export function guardedFetch(
  spec: Pick<
    IncomingAuthSpec,
    "issuer" | "jwksUrl" | "introspection" | "allowHttp" | "allowPrivateIp" | "fetchToken" | "caBundle"
  >,
  base: Fetch = fetch,
): Fetch {
  const send = cappedAnswers(trustingFetch(spec.caBundle, base));
  const tokenOrigins = new Set([spec.issuer.origin, spec.jwksUrl?.origin, spec.introspection?.url.origin]);
  return async (input, init = {}) => {
    const url = new URL(input instanceof URL ? input.href : input);
    if (url.protocol !== "https:" && !(url.protocol === "http:" && spec.allowHttp)) {
      throw new McpmgrError(
        "AUTH_SETUP_FAILED",
        `refusing ${url.href}: only https:// is allowed for token validation`,
        { hint: "use https://, or --oidc-insecure-allow-http for local development" },
      );
    }
    if (!spec.allowPrivateIp) {
      const check = await resolvesInside(url.hostname);
      if (check.inside) {
        throw new McpmgrError(
          "AUTH_SETUP_FAILED",
          `refusing ${url.href}: ${url.hostname} is a private address${privateAddressNote(url.hostname, check.address)}`,
          {
            hint: "pass --jwks-allow-private-ip if the authorization server really is on a private network",
          },
        );
      }
    }
    const headers = new Headers(init.headers);
    if (spec.fetchToken !== undefined && !headers.has("authorization") && tokenOrigins.has(url.origin))
      headers.set("authorization", `Bearer ${spec.fetchToken}`);
    return send(url, { ...init, headers, redirect: "manual" });
  };
}

/** What the name resolved to, when it says more than the name itself (`127.0.0.1 (127.0.0.1)` did not). */
function privateAddressNote(hostname: string, address: string | undefined): string {
  if (address === undefined || address === "") return " or does not resolve";
  return address === hostname.replace(/^\[|\]$/g, "") ? "" : ` (${address})`;
}
