/**
 * Every option of `mcpmgr gateway`, in the order help shows them. The background gateway form reuses
 * this table, so an option added here (such as `--tool-search*`) reaches both forms.
 */
import { caBundleOptions } from "./flags/ca-bundle.ts";
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
  ...caBundleOptions,
  ...telemetryOptions,
  // The gateway's default names its group, whatever --name a background gateway has.
  "otel-service-name": { ...telemetryOptions["otel-service-name"], defaultText: "thv-gateway-<group>" },
} as const;
