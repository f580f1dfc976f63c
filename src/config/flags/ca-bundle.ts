/** Trust for mcpmgr's own HTTPS requests (both directions of authentication). */
import { stringOption } from "../option-spec.ts";
import { nonEmpty } from "../values.ts";

/** The option's help naming the requests a command makes on its own behalf (which differ: see the tables). */
export function caBundleDescription(requests: string): string {
  return `CA bundle (PEM) trusted, besides the built-in public roots and NODE_EXTRA_CA_CERTS, for mcpmgr's own HTTPS requests (not the forwarded MCP traffic): ${requests}`;
}

/** As `run` and `proxy` have it: both directions of authentication, token exchange included. */
export const caBundleOptions = {
  "thv-ca-bundle": stringOption({
    description: caBundleDescription(
      "OIDC/OAuth discovery, JWKS, introspection, client registration, token, refresh and token-exchange requests",
    ),
    valueHint: "path",
    schema: nonEmpty,
  }),
} as const;
