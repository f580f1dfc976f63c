/** Every option of `mcpmgr run`, in the order help shows them. */
import { caBundleOptions } from "./flags/ca-bundle.ts";
import { containerOptions } from "./flags/container.ts";
import { environmentOptions } from "./flags/environment.ts";
import { incomingAuthOptions } from "./flags/incoming-auth.ts";
import { outgoingAuthOptions } from "./flags/outgoing-auth.ts";
import { policyOptions } from "./flags/policy.ts";
import { telemetryOptions } from "./flags/telemetry.ts";
import { workloadOptions } from "./flags/workload.ts";

export const runOptions = {
  ...workloadOptions,
  ...environmentOptions,
  ...containerOptions,
  ...policyOptions,
  ...incomingAuthOptions,
  ...outgoingAuthOptions,
  ...caBundleOptions,
  ...telemetryOptions,
} as const;
