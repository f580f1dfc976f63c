/**
 * mcpmgr's credentials towards a remote MCP server, assembled before the proxy serves:
 * injected headers (literal and from the secrets manager), then one token source (a
 * static bearer token, the OAuth flow, or token exchange of the client's token).
 */
import type { OutgoingAuthSpec } from "../config/outgoing-auth-spec.ts";
import { McpmgrError } from "../errors.ts";
import { staticBearer, type TokenSource } from "../auth/outgoing/token-source.ts";
import { authenticatedFetch, type UpstreamFetch } from "../proxy/authenticated-fetch.ts";
import { defaultUpstreamClient } from "../proxy/upstream/client.ts";
import { createSecretManager } from "../secrets/manager.ts";
import { resolvePaths } from "../state/paths.ts";
import { log } from "./output.ts";
import { oauthTokenSource } from "./oauth-login.ts";
import { tokenExchangeSource } from "../auth/outgoing/token-exchange.ts";
import { trustingFetch } from "../auth/trusted-fetch.ts";

export async function prepareOutgoingAuthentication(
  spec: OutgoingAuthSpec,
  target: URL,
  name: string,
): Promise<UpstreamFetch | undefined> {
  const headers = [...spec.headers];
  if (spec.secretHeaders.length > 0) {
    const secrets = createSecretManager({ dir: resolvePaths().dataDir, env: process.env });
    for (const { name: header, secret } of spec.secretHeaders) {
      const value = (await secrets.resolveSecret(secret)).reveal();
      if (/[\r\n\0]/.test(value)) {
        throw new McpmgrError(
          "INVALID_OPTION",
          `--remote-forward-headers-secret ${header}=${secret}: the secret's value contains a line break`,
          { hint: `store a one-line value with 'mcpmgr secret set ${secret}'` },
        );
      }
      headers.push({ name: header, value });
    }
  }
  let source: TokenSource | undefined;
  let headerName: string | undefined;
  // mcpmgr's own requests (OAuth, token exchange) trust --thv-ca-bundle; the forwarded traffic is the remote's business.
  const http = trustingFetch(spec.caBundle);
  if (spec.mode.kind === "bearer") {
    source = staticBearer(spec.mode.token, (status) =>
      log.warn(`${name}: the remote server refused the bearer token (HTTP ${status})`),
    );
  } else if (spec.mode.kind === "oauth") {
    source = await oauthTokenSource(spec.mode.oauth, target, name, http);
  } else if (spec.tokenExchange) {
    source = tokenExchangeSource(spec.tokenExchange, { onError: (text) => log.warn(`${name}: ${text}`), fetch: http });
    headerName = spec.tokenExchange.headerName;
  }
  if (source === undefined && headers.length === 0) return undefined;
  return authenticatedFetch(defaultUpstreamClient().fetch, {
    headers,
    ...(source ? { source } : {}),
    ...(headerName ? { headerName } : {}),
  });
}
