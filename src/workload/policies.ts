/**
 * What the RunSpec's policies need before the proxy serves: the OIDC issuer's discovery and
 * keys, the webhooks' HMAC secrets (both checked before anything starts, so a typo or a
 * missing secret leaves nothing running), and telemetry's exporters (started last, with the
 * proxy, so a failed start leaves no timers behind).
 */
import type { TelemetrySpec } from "../config/telemetry-spec.ts";
import type { Middleware } from "../proxy/handler.ts";
import type { Telemetry } from "../telemetry/providers.ts";
import type { SpanSecrets } from "../middleware/telemetry.ts";
import { version } from "../version.ts";
import type { WorkloadContext } from "./context.ts";
import { prepareIncomingAuthentication, type PreparedAuthentication } from "./incoming-auth.ts";
import type { Policies } from "./run-spec.ts";

export interface PreparedPolicies {
  readonly authentication: PreparedAuthentication;
  readonly webhooks: Middleware | undefined;
}

export async function preparePolicies(
  policies: Policies,
  serverName: string,
  ctx: WorkloadContext,
): Promise<PreparedPolicies> {
  const authentication = await prepareIncomingAuthentication(policies.incomingAuth, ctx.log);
  return { authentication, webhooks: await prepareWebhooks(policies, serverName, ctx) };
}

/** The webhook middleware, with HMAC secrets resolved now so a missing one fails at start-up. */
async function prepareWebhooks(
  policies: Policies,
  serverName: string,
  ctx: WorkloadContext,
): Promise<Middleware | undefined> {
  const config = policies.webhooks;
  if (config === undefined) return undefined;
  const hmacSecrets = new Map<string, string>();
  for (const hook of [...config.mutating, ...config.validating]) {
    const ref = hook.hmacSecretRef;
    if (ref === undefined || hmacSecrets.has(ref)) continue;
    hmacSecrets.set(ref, (await ctx.secrets().resolveSecret(ref, `${hook.origin}: hmac_secret_ref`)).reveal());
  }
  const { webhooks } = await import("../middleware/webhooks.ts");
  return webhooks({ config, hmacSecrets, serverName, onFailure: (text) => ctx.log.warn(text) });
}

/** Telemetry, loaded only when configured: without it none of OpenTelemetry is imported. */
export async function startTelemetry(
  spec: TelemetrySpec | undefined,
  serverName: string,
  sessionIdleMs: number,
  warn?: (text: string) => void,
): Promise<{ middleware: (secrets?: SpanSecrets) => Middleware; telemetry: Telemetry } | undefined> {
  if (spec === undefined) return undefined;
  const [providers, { telemetryMiddleware }] = await Promise.all([
    import("../telemetry/providers.ts"),
    import("../middleware/telemetry.ts"),
  ]);
  const telemetry = providers.startTelemetry(spec, version, warn);
  // A gateway builds its middleware with its `withhold` (gateway/start.ts), a workload that holds secrets
  // with its redactor (workload/start.ts).
  return {
    telemetry,
    middleware: (secrets) => telemetryMiddleware(spec, telemetry, serverName, sessionIdleMs, secrets),
  };
}
