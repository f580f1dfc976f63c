/**
 * The handler chain of every endpoint mcpmgr serves, built in one place for `run`, `proxy`
 * and `gateway`. Outermost first:
 *   built-in protections  Origin/Host guard, health, body limit (middleware/builtin-chain.ts)
 *   a gateway's rewrite   search mode: a call_tool call becomes the tools/call it stands for, so every
 *                         policy below sees (and audits) the real tool
 *   telemetry             every request is traced and counted; /metrics needs no token
 *   audit                 records what the policies below deny
 *   authentication        a refused client learns nothing more
 *   message checks        one reading of each body for every policy and audit; a body the
 *                         server could read differently is refused (message-gate.ts)
 *   tool filter           --tools / --tools-override: hides and renames tools
 *   authorization         Cedar decides on the server's own tool names (after the renames)
 *   webhooks              see what reaches the server: after the refusals and renames
 *   upstream              the stdio bridge, the transparent forwarder, or the gateway's front end
 * Each policy is present only when configured (the gateway has no webhooks). Behind a
 * gateway, the policies see the gateway's names for tools and prompts; the gateway's own tools
 * (search mode's find_tool and call_tool) pass the tool filter and Cedar, which decide on the
 * tools those reach instead.
 */
import type { AuthzConfig } from "../config/authz-config.ts";
import type { ToolsPolicy } from "../config/tools-policy.ts";
import type { Handler, Middleware } from "../proxy/handler.ts";
import type { AuditOptions } from "./audit.ts";
import type { AuthzEndpoint } from "./authz.ts";
import { withBuiltinProtections, type BuiltinProtections } from "./builtin-chain.ts";
import { messageGate } from "./message-gate.ts";
import { defaultMaxMessageBytes } from "../proxy/answer-limit.ts";

export interface ChainPolicies {
  readonly telemetry?: Middleware | undefined;
  /** The audit configuration and where its lines go. */
  readonly audit?: AuditOptions | undefined;
  readonly authentication?: readonly Middleware[];
  readonly tools?: ToolsPolicy | undefined;
  /** Told once when the first complete tools/list lacks tools `tools` names (the workload's log, the console). */
  readonly toolsWarning?: ((text: string) => void) | undefined;
  readonly authz?: AuthzConfig | undefined;
  /** Told when the Cedar evaluator stops answering and when it answers again (the workload's log, the console). */
  readonly authzWarning?: ((text: string) => void) | undefined;
  readonly webhooks?: Middleware | undefined;
  /** Runs before every policy: a gateway's rewrite of its own tools' calls (gateway/call-tool-rewrite.ts). */
  readonly rewrite?: Middleware | undefined;
  /** Tools the endpoint serves itself (not a server's): listed and called past the tool filter and Cedar. */
  readonly ownTools?: ReadonlySet<string>;
  /** What a gateway adds to Cedar: names that follow a tool when it is renamed, hidden tools answered as unknown. */
  readonly authzEndpoint?: Omit<AuthzEndpoint, "own">;
}

/** A policy's module is loaded only when the policy is configured (Cedar's engine alone is megabytes). */
export async function policyChain(
  upstream: Handler,
  protections: BuiltinProtections,
  policies: ChainPolicies,
): Promise<Handler> {
  const [audit, tools, authz] = await Promise.all([
    policies.audit ? import("./audit.ts") : undefined,
    policies.tools ? import("./tool-filter.ts") : undefined,
    policies.authz ? import("./authz.ts") : undefined,
  ]);
  // Loaded into the Cedar evaluator before the endpoint serves: policies it refuses fail the start.
  const policySet =
    authz && policies.authz
      ? await authz.openPolicySet(policies.authz, policies.authzWarning ? { log: policies.authzWarning } : {})
      : undefined;
  const maxAnswerBytes = protections.maxMessageBytes ?? defaultMaxMessageBytes;
  // Policies that read bodies share one checked reading of them; telemetry alone only labels.
  const readsBodies = Boolean(policies.audit || policies.tools || policies.authz || policies.webhooks);
  // Tool arguments' keys are checked when a policy inspects them: webhooks see all params.
  const inspectsArguments = Boolean(policies.webhooks || (authz && policySet && authz.inspectsArguments(policySet)));
  return withBuiltinProtections(
    upstream,
    protections,
    ...(policies.rewrite ? [policies.rewrite] : []),
    ...(policies.telemetry ? [policies.telemetry] : []),
    ...(audit && policies.audit ? [audit.auditTrail(policies.audit, maxAnswerBytes)] : []),
    ...(policies.authentication ?? []),
    ...(readsBodies ? [messageGate({ arguments: inspectsArguments })] : []),
    ...(tools && policies.tools
      ? [tools.toolFilter(policies.tools, policies.ownTools, maxAnswerBytes, policies.toolsWarning)]
      : []),
    ...(authz && policies.authz
      ? [
          authz.cedarAuthorization(policies.authz, {
            ...policies.authzEndpoint,
            ...(policies.ownTools ? { own: policies.ownTools } : {}),
            maxAnswerBytes,
          }),
        ]
      : []),
    ...(policies.webhooks ? [policies.webhooks] : []),
  );
}
