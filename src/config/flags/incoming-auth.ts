/** Options that protect the proxy's own endpoint with OIDC token validation. */
import { booleanOption, inProcessList, stringOption } from "../option-spec.ts";
import { commaList, httpUrl, nonEmpty } from "../values.ts";

export const incomingAuthOptions = {
  "oidc-issuer": stringOption({
    description: "OIDC issuer URL whose tokens the proxy accepts",
    valueHint: "url",
    schema: httpUrl,
  }),
  "oidc-audience": stringOption({
    description: "Audience (aud) that incoming tokens must carry",
    valueHint: "audience",
    schema: nonEmpty,
  }),
  "oidc-client-id": stringOption({
    description: "OIDC client ID of the proxy (used for token introspection)",
    valueHint: "id",
    schema: nonEmpty,
  }),
  "oidc-client-secret": stringOption({
    description: `OIDC client secret, optional, for token introspection ${inProcessList("oidc-client-secret")}`,
    valueHint: "secret",
    schema: nonEmpty,
  }),
  "oidc-client-secret-file": stringOption({
    description: "File containing the OIDC client secret (the form a background workload records)",
    valueHint: "path",
    schema: nonEmpty,
  }),
  "oidc-introspection-url": stringOption({
    description: "Token introspection endpoint (RFC 7662) for opaque tokens",
    valueHint: "url",
    schema: httpUrl,
  }),
  "oidc-jwks-url": stringOption({
    description: "URL of the JWKS used to verify token signatures (default: discovered from the issuer)",
    valueHint: "url",
    schema: httpUrl,
  }),
  "oidc-scopes": stringOption({
    description: "Comma-separated scopes advertised in the protected-resource metadata (RFC 9728)",
    valueHint: "scopes",
    defaultText: "openid",
    schema: commaList,
  }),
  "oidc-insecure-allow-http": booleanOption({
    description: "Allow http:// issuers and JWKS URLs (local development only)",
    default: false,
  }),
  "jwks-allow-private-ip": booleanOption({
    description: "Allow JWKS/OIDC endpoints on private IP addresses",
    default: false,
  }),
  "jwks-auth-token-file": stringOption({
    description: "File with a bearer token sent when fetching JWKS/OIDC documents",
    valueHint: "path",
    schema: nonEmpty,
  }),
  "resource-url": stringOption({
    description: "Explicit resource URL advertised by the OAuth protected-resource metadata (RFC 9728)",
    valueHint: "url",
    schema: httpUrl,
  }),
} as const;
