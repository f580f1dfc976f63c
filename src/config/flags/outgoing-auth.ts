/** Options that authenticate mcpmgr to a remote MCP server (shared by `run` and `proxy`). */
import { booleanOption, inProcessList, repeatableOption, stringOption } from "../option-spec.ts";
import { commaList, duration, headerAssignment, httpUrl, keyValue, nonEmpty, oneOf, port } from "../values.ts";

export const outgoingAuthOptions = {
  "remote-auth": booleanOption({
    description: "Authenticate to the remote MCP server with OAuth 2.1 / OIDC",
    default: false,
  }),
  "remote-auth-issuer": stringOption({
    description: "OAuth/OIDC issuer URL of the remote server's authorization server",
    valueHint: "url",
    schema: httpUrl,
  }),
  "remote-auth-authorize-url": stringOption({
    description: "OAuth authorization endpoint (instead of --remote-auth-issuer, for non-OIDC OAuth)",
    valueHint: "url",
    schema: httpUrl,
  }),
  "remote-auth-token-url": stringOption({
    description: "OAuth token endpoint (instead of --remote-auth-issuer)",
    valueHint: "url",
    schema: httpUrl,
  }),
  "remote-auth-client-id": stringOption({
    description: "OAuth client ID (optional when the server supports dynamic registration, RFC 7591)",
    valueHint: "id",
    schema: nonEmpty,
  }),
  "remote-auth-client-secret": stringOption({
    description: `OAuth client secret ${inProcessList("remote-auth-client-secret")}`,
    valueHint: "secret",
    schema: nonEmpty,
  }),
  "remote-auth-client-secret-file": stringOption({
    description: "File containing the OAuth client secret",
    valueHint: "path",
    schema: nonEmpty,
  }),
  "remote-auth-bearer-token": stringOption({
    description: `Static bearer token for the remote server, instead of OAuth ${inProcessList("remote-auth-bearer-token")}`,
    valueHint: "token",
    schema: nonEmpty,
  }),
  "remote-auth-bearer-token-file": stringOption({
    description: "File containing a static bearer token for the remote server",
    valueHint: "path",
    schema: nonEmpty,
  }),
  "remote-auth-callback-port": stringOption({
    description: "Loopback port of the OAuth redirect callback server",
    valueHint: "port",
    default: "8666",
    schema: port,
  }),
  "remote-auth-resource": stringOption({
    description: "OAuth 2.0 resource indicator (RFC 8707) sent with authorization and token requests",
    valueHint: "uri",
    schema: nonEmpty,
  }),
  "remote-auth-scopes": stringOption({
    description: "Comma-separated scopes to request",
    valueHint: "scopes",
    defaultText:
      "the remote's 401 challenge scope, else its metadata's scopes_supported, else openid,profile,email with OIDC",
    schema: commaList,
  }),
  "remote-auth-skip-browser": booleanOption({
    description: "Print the authorization URL instead of opening a browser",
    default: false,
  }),
  "remote-auth-timeout": stringOption({
    description: "How long to wait for the OAuth flow to complete (e.g. 30s, 1m, 2m30s)",
    valueHint: "duration",
    default: "30s",
    schema: duration,
  }),
  "remote-forward-headers": repeatableOption({
    description: "Header to add to every request to the remote server, Name=Value (repeatable)",
    valueHint: "Name=Value",
    schema: headerAssignment,
  }),
  "remote-forward-headers-secret": repeatableOption({
    description: "Header whose value comes from the secrets manager, Name=secret-name (repeatable)",
    valueHint: "Name=secret",
    schema: keyValue,
  }),
  "token-exchange-url": stringOption({
    description: "OAuth 2.0 token exchange endpoint (RFC 8693); setting it enables token exchange",
    valueHint: "url",
    schema: httpUrl,
  }),
  "token-exchange-audience": stringOption({
    description: "Audience of exchanged tokens",
    valueHint: "audience",
    schema: nonEmpty,
  }),
  "token-exchange-client-id": stringOption({
    description: "Client ID for token exchange",
    valueHint: "id",
    schema: nonEmpty,
  }),
  "token-exchange-client-secret": stringOption({
    description: `Client secret for token exchange ${inProcessList("token-exchange-client-secret")}`,
    valueHint: "secret",
    schema: nonEmpty,
  }),
  "token-exchange-client-secret-file": stringOption({
    description: "File containing the token-exchange client secret",
    valueHint: "path",
    schema: nonEmpty,
  }),
  "token-exchange-header-name": stringOption({
    description: "Header that carries the exchanged token",
    valueHint: "name",
    defaultText: "replaces Authorization",
    schema: nonEmpty,
  }),
  "token-exchange-scopes": stringOption({
    description: "Comma-separated scopes requested for exchanged tokens",
    valueHint: "scopes",
    schema: commaList,
  }),
  "token-exchange-subject-token-type": stringOption({
    description: "Type of the subject token: access_token or id_token",
    valueHint: "access_token|id_token",
    default: "access_token",
    schema: oneOf(["access_token", "id_token"] as const),
  }),
  "remote-insecure-allow-http": booleanOption({
    description:
      "Send mcpmgr's credentials for the remote (a token, a secret or Authorization header) to it over plain http:// beyond loopback, in clear text (a trusted network only)",
    default: false,
  }),
} as const;
