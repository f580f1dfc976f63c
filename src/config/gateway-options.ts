/**
 * Every option of `mcpmgr gateway`, in the order help shows them. The background gateway form reuses
 * this table, so an option added here (such as `--tool-search*`) reaches both forms.
 */
import { caBundleDescription, caBundleOptions } from "./flags/ca-bundle.ts";
import { gatewayBackgroundOptions, gatewayListenOptions, gatewayPolicyOptions } from "./flags/gateway.ts";
import { incomingAuthOptions } from "./flags/incoming-auth.ts";
import { policyOptions } from "./flags/policy.ts";
import { telemetryOptions } from "./flags/telemetry.ts";
import { toolSearchOptions } from "./flags/tool-search.ts";

export const gatewayOptions = {
  ...gatewayBackgroundOptions,
  ...gatewayListenOptions,
  ...gatewayPolicyOptions,
  ...toolSearchOptions,
  ...policyOptions,
  ...incomingAuthOptions,
  // Incoming authentication only: a gateway reaches its members with the gateway key, no OAuth of its own.
  "thv-ca-bundle": {
    ...caBundleOptions["thv-ca-bundle"],
    description: caBundleDescription("OIDC discovery, JWKS and introspection requests"),
  },
  ...telemetryOptions,
  // Its /metrics is on its own port (cli/gateway.ts): a gateway has no proxy port.
  "otel-enable-prometheus-metrics-path": {
    ...telemetryOptions["otel-enable-prometheus-metrics-path"],
    description: "Serve Prometheus metrics at /metrics on the gateway's port",
  },
  // The gateway's default names its group, whatever --name a background gateway has.
  "otel-service-name": { ...telemetryOptions["otel-service-name"], defaultText: "thv-gateway-<group>" },
} as const;
