/** Every option of `mcpmgr gateway`, in the order help shows them. */
import { caBundleOptions } from "./flags/ca-bundle.ts";
import { gatewayBackgroundOptions, gatewayListenOptions, gatewayPolicyOptions } from "./flags/gateway.ts";
import { incomingAuthOptions } from "./flags/incoming-auth.ts";
import { policyOptions } from "./flags/policy.ts";
import { telemetryOptions } from "./flags/telemetry.ts";

export const gatewayOptions = {
  ...gatewayBackgroundOptions,
  ...gatewayListenOptions,
  ...gatewayPolicyOptions,
  ...policyOptions,
  ...incomingAuthOptions,
  ...caBundleOptions,
  ...telemetryOptions,
} as const;

export type GatewayOptionName = keyof typeof gatewayOptions;
