/**
 * The incoming-authentication middleware for a proxy endpoint, set up (discovery, JWKS) before
 * it serves. The verifier and the middleware (jose among them) are loaded only for an endpoint
 * that asks for tokens: a workload, proxy or gateway without --oidc-* never loads them.
 */
import type { IncomingAuthSpec } from "../config/incoming-auth-spec.ts";
import { localhostAudienceWarning } from "../config/loopback.ts";
import type { Middleware } from "../proxy/handler.ts";
import type { WorkloadLog } from "./context.ts";

/** What of the listener the RFC 9728 document's URL depends on (behind a reverse proxy). */
export interface AuthenticatedListener {
  readonly trustProxyHeaders: boolean;
  readonly host: string;
  /** `--allowed-hosts`: the forwarded names, besides the listener's own, the document may name. */
  readonly allowedHosts: readonly string[];
}

export interface PreparedAuthentication {
  /** The middleware for an endpoint path (known once the upstream is running). */
  forEndpoint(endpointPath: string, listen: AuthenticatedListener): Middleware[];
}

/** Discovery and a JWKS fetch happen here, so a bad issuer fails before anything starts. */
export async function prepareIncomingAuthentication(
  spec: IncomingAuthSpec | undefined,
  log: WorkloadLog,
): Promise<PreparedAuthentication> {
  if (spec === undefined) return { forEndpoint: () => [] };
  const [{ createTokenVerifier }, { bearerAuthentication }] = await Promise.all([
    import("../auth/incoming/verifier.ts"),
    import("../middleware/authn.ts"),
  ]);
  const verifier = await createTokenVerifier(spec, { warn: (text) => log.warn(text) });
  if (spec.audience === undefined) {
    log.warn(
      `--oidc-audience is not set: any token ${spec.issuer.href} issued is accepted, including tokens meant for other applications; set it to this server's audience`,
    );
  }
  log.info(
    `clients must present bearer tokens from ${spec.issuer.href}${spec.audience ? ` for audience ${spec.audience}` : ""}`,
  );
  return {
    forEndpoint: (endpointPath, listen) => {
      const localhost = localhostAudienceWarning(spec.audience, listen.host, endpointPath);
      if (localhost !== undefined) log.warn(localhost);
      return [
        bearerAuthentication({
          spec,
          verifier,
          endpointPath,
          trustProxyHeaders: listen.trustProxyHeaders,
          listenHost: listen.host,
          allowedHosts: listen.allowedHosts,
          warn: (text) => log.warn(text),
        }),
      ];
    },
  };
}
