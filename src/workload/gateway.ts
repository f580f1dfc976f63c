/**
 * Starting `mcpmgr gateway GROUP` in this process, the way a workload starts: the group
 * checked, the limits read, the policies prepared (OIDC issuer, audit log, telemetry
 * exporters) and search mode's embeddings key resolved before anything serves, then the
 * gateway (gateway/start.ts) behind the same policy chain as a workload's. Everything
 * gateway-specific, the MCP SDK v2 included, is loaded only here.
 */
import { gatewayComponentName, type GatewaySpec } from "../config/gateway-spec.ts";
import { assertGroupExists } from "../state/groups.ts";
import { WorkloadStore } from "../state/workloads.ts";
import { assertAuditLogWritable, auditSink, type AuditSink } from "./audit-sink.ts";
import type { WorkloadContext } from "./context.ts";
import { prepareIncomingAuthentication } from "./incoming-auth.ts";
import { proxyLimits } from "./limits.ts";
import { startTelemetry } from "./policies.ts";

export interface RunningGateway {
  /** The URL MCP clients use. */
  readonly url: string;
  /** Never resolves: a gateway stops only when asked (the supervisor's `startWorkload` shape). */
  readonly exited: Promise<string>;
  /** Graceful stop of the gateway, its sessions, exporters and audit log. */
  stop(): Promise<void>;
}

export async function startGatewayWorkload(spec: GatewaySpec, ctx: WorkloadContext): Promise<RunningGateway> {
  await assertGroupExists(ctx.paths, spec.group);
  const name = gatewayComponentName(spec.group);
  const limits = proxyLimits(ctx.env);
  if (spec.audit) assertAuditLogWritable(spec.audit);
  const authentication = await prepareIncomingAuthentication(spec.incomingAuth, ctx.log);
  // Resolved before anything serves: a missing secret is a start-up error, not a failing search later.
  const keySecret = spec.toolSearch?.embeddings?.keySecret;
  const embeddingsApiKey = keySecret
    ? (await ctx.secrets().resolveSecret(keySecret, "--tool-search-embeddings-key-secret")).reveal()
    : undefined;
  let audited: AuditSink | undefined;
  let observed: Awaited<ReturnType<typeof startTelemetry>>;
  try {
    audited = spec.audit ? auditSink(spec.audit, ctx.stderr, (message) => ctx.log.warn(message)) : undefined;
    observed = await startTelemetry(spec.telemetry, name, limits.sessionIdleMs, (message) => ctx.log.warn(message));
    const { startGateway } = await import("../gateway/start.ts");
    const gateway = await startGateway(spec, {
      store: new WorkloadStore(ctx.paths),
      log: (level, text) => ctx.log[level](text),
      requestTimeoutMs: limits.requestTimeoutMs,
      sessionIdleMs: limits.sessionIdleMs,
      maxSessions: limits.maxSessions,
      maxBodyBytes: limits.maxBodyBytes,
      maxMessageBytes: limits.maxMessageBytes,
      telemetry: observed?.middleware,
      audit: spec.audit && audited ? { config: spec.audit, write: audited.write } : undefined,
      authentication: (path) =>
        authentication.forEndpoint(path, { ...spec.listen, trustProxyHeaders: spec.trustProxyHeaders }),
      embeddingsApiKey,
    });
    const opened = { observed, audited };
    return {
      url: gateway.url,
      exited: gateway.exited,
      async stop() {
        await gateway.stop();
        await Promise.allSettled([opened.observed?.telemetry.shutdown(), opened.audited?.close()]);
      },
    };
  } catch (err) {
    await Promise.allSettled([observed?.telemetry.shutdown(), audited?.close()]);
    throw err;
  }
}
