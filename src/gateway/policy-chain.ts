/**
 * The policies in front of the gateway, in the order `run` applies them (workload-runner):
 * telemetry → audit → authentication → tool policy → authorization. They act on the
 * gateway's JSON-RPC traffic, so `--tools`, `--tools-override` and Cedar policies name tools
 * and prompts by their gateway names. One function, so the shared chain builder the
 * workload layer is getting can replace it.
 */
import type { AuthzConfig } from "../config/authz-config.ts";
import type { ToolsPolicy } from "../config/tools-policy.ts";
import { cedarAuthorization } from "../middleware/authz.ts";
import { toolFilter } from "../middleware/tool-filter.ts";
import type { Middleware } from "../proxy/handler.ts";

export interface GatewayPolicies {
  /** Prepared by the caller (it owns exporters and files): */
  readonly telemetry?: Middleware | undefined;
  readonly audit?: Middleware | undefined;
  readonly authentication: readonly Middleware[];
  readonly tools: ToolsPolicy | undefined;
  readonly authz: AuthzConfig | undefined;
}

export function gatewayPolicyChain(policies: GatewayPolicies): Middleware[] {
  return [
    ...(policies.telemetry ? [policies.telemetry] : []),
    ...(policies.audit ? [policies.audit] : []),
    ...policies.authentication,
    ...(policies.tools ? [toolFilter(policies.tools)] : []),
    ...(policies.authz ? [cedarAuthorization(policies.authz)] : []),
  ];
}
