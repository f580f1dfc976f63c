/**
 * One warning when a listener is bound beyond loopback (`--host 0.0.0.0`, also when replayed from
 * a `--from-config` file someone handed over): the URL printed for clients is the loopback one, so
 * nothing else would say that the endpoint serves the network, and with what protection.
 */
import { isLoopbackHostname } from "../config/loopback.ts";
import { log } from "./output.ts";

export interface ListenerProtections {
  /** `--oidc-issuer`: callers need its tokens. */
  readonly issuer?: URL | undefined;
  /** `--authz-config`: Cedar decides each call. */
  readonly authz?: boolean;
  /** `--otel-enable-prometheus-metrics-path`: `/metrics` answers before authentication, as scrapers expect. */
  readonly metrics?: boolean;
}

export function warnIfReachable(what: string, host: string, url: string, protections: ListenerProtections): void {
  if (isLoopbackHostname(host)) return;
  const port = new URL(url).port;
  const where = host === "0.0.0.0" || host === "::" ? "every address of this machine" : host;
  const guard =
    protections.issuer !== undefined
      ? `callers need a token from ${protections.issuer.href} (--oidc-issuer)${protections.authz ? " and Cedar decides each call (--authz-config)" : ""}${protections.metrics ? `; /metrics answers anyone without one (--otel-enable-prometheus-metrics-path: request counts and the names of the tools called)` : ""}`
      : `no authentication (no --oidc-issuer): anyone who can reach port ${port} can call its tools`;
  log.warn(`${what} listens on ${where}, port ${port}, reachable from the network; ${guard}`);
}
