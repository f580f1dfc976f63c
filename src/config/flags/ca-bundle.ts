/** Trust for mcpmgr's own HTTPS requests (both directions of authentication). */
import { stringOption } from "../option-spec.ts";
import { nonEmpty } from "../values.ts";

export const caBundleOptions = {
  "thv-ca-bundle": stringOption({
    description:
      "CA bundle (PEM) trusted, besides the built-in public roots and NODE_EXTRA_CA_CERTS, for mcpmgr's own HTTPS requests (not the forwarded MCP traffic): OIDC/OAuth discovery, JWKS, introspection, client registration, token, refresh and token-exchange requests",
    valueHint: "path",
    schema: nonEmpty,
  }),
} as const;
