/**
 * `mcpmgr gateway GROUP`: one MCP endpoint for a group's running workloads, in the
 * foreground like `proxy` (prints the URL, serves /health, stops gracefully on a signal).
 * Everything gateway-specific, the MCP SDK v2 included, is loaded only when this runs.
 */
import { assertGroupExists } from "../state/groups.ts";
import { defineCommand } from "citty";
import { buildGatewaySpec, gatewayComponentName, type GatewaySpec } from "../config/gateway-spec.ts";
import { gatewayOptions } from "../config/gateway-options.ts";
import type { Middleware } from "../proxy/handler.ts";
import { resolvePaths } from "../state/paths.ts";
import { WorkloadStore } from "../state/workloads.ts";
import { version } from "../version.ts";
import { assertAuditLogWritable, auditSink, type AuditSink } from "./audit-sink.ts";
import { toCittyArgs } from "./citty-args.ts";
import { prepareIncomingAuthentication } from "./incoming-auth.ts";
import { maxBodyBytesFromEnv, requestTimeoutMsFromEnv, sessionIdleMsFromEnv } from "./limits.ts";
import { log, printResult } from "./output.ts";
import { untilSignal } from "./signals.ts";

export default defineCommand({
  meta: {
    name: "gateway",
    description:
      "Serve one MCP endpoint for a group's running workloads (tools and prompts named <workload>_<name>), in the foreground",
  },
  args: toCittyArgs(gatewayOptions, {
    GROUP: { description: "The group whose running workloads the gateway serves", required: true },
  }),
  async run({ rawArgs }) {
    const code = await runGateway(buildGatewaySpec(rawArgs));
    if (code !== 0) process.exitCode = code;
  },
});

async function runGateway(spec: GatewaySpec): Promise<number> {
  await assertGroupExists(resolvePaths(), spec.group);
  const name = gatewayComponentName(spec.group);
  const limits = {
    requestTimeoutMs: requestTimeoutMsFromEnv(),
    sessionIdleMs: sessionIdleMsFromEnv(),
    maxBodyBytes: maxBodyBytesFromEnv(),
  };
  if (spec.audit) assertAuditLogWritable(spec.audit);
  const authentication = await prepareIncomingAuthentication(spec.incomingAuth);
  let audited: AuditSink | undefined;
  let observed: { middleware: Middleware; shutdown(): Promise<void> } | undefined;
  try {
    audited = spec.audit ? auditSink(spec.audit, undefined, (message) => log.warn(message)) : undefined;
    observed = await prepareTelemetry(spec, name, limits.sessionIdleMs);
    const { startGateway } = await import("../gateway/start.ts");
    const { auditTrail } = await import("../middleware/audit.ts");
    const gateway = await startGateway(spec, {
      store: new WorkloadStore(resolvePaths()),
      log: (level, text) => log[level](text),
      ...limits,
      telemetry: observed?.middleware,
      audit: spec.audit && audited ? auditTrail({ config: spec.audit, write: audited.write }) : undefined,
      authentication: (path) => authentication.forEndpoint(path, spec.trustProxyHeaders),
    });
    log.info(`gateway for group '${spec.group}' is running; MCP clients connect to:`);
    printResult(gateway.url);
    const signal = await untilSignal();
    log.info(`${signal}: stopping the gateway for group '${spec.group}'`);
    await gateway.stop();
    return 0;
  } finally {
    await Promise.allSettled([observed?.shutdown(), audited?.close()]);
  }
}

/** Telemetry, loaded only when configured: without it none of OpenTelemetry is imported. */
async function prepareTelemetry(
  spec: GatewaySpec,
  name: string,
  sessionIdleMs: number,
): Promise<{ middleware: Middleware; shutdown(): Promise<void> } | undefined> {
  if (spec.telemetry === undefined) return undefined;
  const [{ startTelemetry }, { telemetryMiddleware }] = await Promise.all([
    import("../telemetry/providers.ts"),
    import("../middleware/telemetry.ts"),
  ]);
  const telemetry = startTelemetry(spec.telemetry, version);
  return {
    middleware: telemetryMiddleware(spec.telemetry, telemetry, name, sessionIdleMs),
    shutdown: () => telemetry.shutdown(),
  };
}
