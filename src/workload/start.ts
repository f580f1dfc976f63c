/**
 * Starting a workload in this process, in three steps: launch (the server, by the process or
 * the container launcher; nothing for a remote URL), upstream (the stdio bridge or the
 * transparent forwarder in front of it), serve (the policy chain on a listening proxy).
 * `run --foreground` and the supervisor both start workloads this way; whatever fails on the
 * way stops what was already started. The supervisor hands in its listener, which outlives
 * each start: a restart swaps what it serves instead of giving up the port.
 */
import { LiveStreams } from "../proxy/live-streams.ts";
import { clientUrl } from "../state/workload-url.ts";
import type { Handler } from "../proxy/handler.ts";
import { findFreePort, serve, type RunningServer } from "../proxy/serve.ts";
import type { LaunchedServer } from "../runtime/server-handle.ts";
import { errorMessage } from "../errors.ts";
import { auditSink, type AuditSink } from "./audit-sink.ts";
import type { WorkloadContext } from "./context.ts";
import { preparePolicies, startTelemetry, type PreparedPolicies } from "./policies.ts";
import { policyChain } from "../middleware/policy-chain.ts";
import { memberGuard } from "../middleware/gateway-credential.ts";
import { groupGuard, readGatewayKey } from "../state/gateway-guard.ts";
import type { ContainerPlacement, ProcessPlacement } from "./placement.ts";
import type { RunSpec } from "./run-spec.ts";
import { connectRemote, connectServer, type Upstream } from "./upstream.ts";

export interface RunningWorkload {
  /** The URL MCP clients use. */
  readonly url: string;
  /** Resolves with the reason when the server stops on its own. */
  readonly exited: Promise<string>;
  /**
   * It redacts secret values from its audit and log (its server's, or those mcpmgr sends its remote):
   * the supervisor's status says so, and a gateway then records none of its data (gateway/membership.ts).
   */
  readonly holdsSecrets?: boolean;
  /**
   * Graceful stop of proxy and server. `restarting`: the server will be started again on a
   * listener the workload was given, which stays open (and answers 503 meanwhile).
   */
  stop(options?: {
    readonly restarting?: boolean;
    readonly onRequestsInProgress?: () => Promise<unknown>;
  }): Promise<void>;
}

export interface StartOptions {
  /**
   * The workload's log under a supervisor: the server's output and audit lines go there.
   * Without it (a foreground run) audit lines go to the terminal's stderr.
   */
  readonly workloadLog?: (text: string) => void;
  /** Run by the supervisor: `run` already showed what it shows (overlays, build progress). */
  readonly supervised?: boolean;
  /**
   * A listener that outlives this start (the supervisor's, kept across restarts): the
   * workload serves on it, and a restarting stop leaves it open. Without it the workload
   * opens its own listener and closes it when it stops.
   */
  readonly listener?: KeptListener;
  /**
   * Aborted when the start is to be given up (the supervisor was asked to stop): what was
   * launched is stopped, a pull, build or login under way is abandoned, and the start throws
   * the signal's reason.
   */
  readonly signal?: AbortSignal;
  /**
   * Called once when the server, launched, has not answered after `afterMs` (a foreground run says so,
   * as `run` and `start` do of a supervisor's start). Not counted during a pull or build, which say
   * their own progress, nor for a remote, whose start is its login.
   */
  readonly stillStarting?: { readonly afterMs: number; readonly say: () => void };
}

export interface KeptListener {
  readonly server: RunningServer;
  /** What it answers while no workload serves on it (503 with Retry-After and a JSON-RPC error). */
  readonly unavailable: Handler;
}

/** How long requests under way may take to finish when a workload stops or restarts. */
const stopGraceMs = 10_000;

export async function startWorkload(
  spec: RunSpec,
  ctx: WorkloadContext,
  options: StartOptions = {},
): Promise<RunningWorkload> {
  const { listener, signal } = options;
  const live = listener?.server.live ?? new LiveStreams();
  const proxyPort = listener?.server.port ?? spec.listen.port ?? (await findFreePort());
  const prepared = await preparePolicies(spec.policies, spec.name, ctx);
  signal?.throwIfAborted();
  const upstreamOptions = { live, onServerOutput: options.workloadLog, ...(signal ? { signal } : {}) };
  let launched: LaunchedServer | undefined;
  let upstream: Upstream;
  if (spec.placement.kind === "remote") upstream = await connectRemote(spec, spec.placement, ctx, upstreamOptions);
  else {
    const interactive = !options.supervised;
    launched = await launch(spec, spec.placement, ctx, { interactive, proxyPort, ...(signal ? { signal } : {}) });
    const notice = options.stillStarting && setTimeout(options.stillStarting.say, options.stillStarting.afterMs);
    try {
      upstream = await whileLaunched(launched, signal, () =>
        connectServer(spec, launched as LaunchedServer, ctx, upstreamOptions),
      );
    } finally {
      clearTimeout(notice);
    }
  }
  const workload = await serveWorkload(spec, ctx, {
    upstream,
    launched,
    prepared,
    live,
    proxyPort,
    workloadLog: options.workloadLog,
    listener,
  });
  if (signal?.aborted) {
    await workload.stop();
    signal.throwIfAborted();
  }
  return workload;
}

/**
 * The step after the launch (the handshake, waiting for an HTTP server to answer), with the
 * launched server stopped at once when the start is given up: the step then fails promptly,
 * and with the signal's reason rather than its own.
 */
async function whileLaunched<T>(
  launched: LaunchedServer,
  signal: AbortSignal | undefined,
  step: () => Promise<T>,
): Promise<T> {
  if (signal === undefined) return step();
  const stopServer = () => void launched.server.stop(1_000);
  if (signal.aborted) stopServer();
  signal.addEventListener("abort", stopServer, { once: true });
  try {
    const result = await step();
    if (signal.aborted) await launched.server.stop(1_000);
    signal.throwIfAborted();
    return result;
  } catch (err) {
    signal.throwIfAborted();
    throw err;
  } finally {
    signal.removeEventListener("abort", stopServer);
  }
}

/** Step one: the server, where the RunSpec places it (each launcher loaded only for its runtime). */
async function launch(
  spec: RunSpec,
  placement: ProcessPlacement | ContainerPlacement,
  ctx: WorkloadContext,
  options: { readonly interactive: boolean; readonly proxyPort: number; readonly signal?: AbortSignal },
): Promise<LaunchedServer> {
  if (placement.kind === "process") {
    const { launchLocalProcess } = await import("./launch-process.ts");
    const launched = await launchLocalProcess(spec.name, placement, ctx, options);
    // Spawning is quick and cannot be taken back half-way: given up meanwhile, the process is stopped.
    if (options.signal?.aborted) await launched.server.stop(1_000);
    options.signal?.throwIfAborted();
    return launched;
  }
  const { launchContainer } = await import("./launch-container.ts");
  return launchContainer(spec, placement, ctx, options);
}

/**
 * What a direct caller of a foreground run is told while a gateway with policies serves its group
 * (workload/foreground.ts: such a run is refused at start, and says so when such a gateway starts later).
 */
function foregroundRefusal(spec: RunSpec): string {
  return `Forbidden: ${spec.name} is a foreground run in group '${spec.group}', which a gateway with policies serves now: it refuses every caller but that gateway, and no gateway serves a foreground run; run it in the background so the gateway serves it, or put it in another group`;
}

/** Step three: the policy chain over the upstream, listening. */
async function serveWorkload(
  spec: RunSpec,
  ctx: WorkloadContext,
  parts: {
    readonly upstream: Upstream;
    readonly launched: LaunchedServer | undefined;
    readonly prepared: PreparedPolicies;
    readonly live: LiveStreams;
    readonly proxyPort: number;
    readonly workloadLog: ((text: string) => void) | undefined;
    readonly listener: KeptListener | undefined;
  },
): Promise<RunningWorkload> {
  const { policies, listen } = spec;
  const server = parts.launched?.server;
  // Audit data is scrubbed of the server's secrets, or of those mcpmgr sends a remote.
  const redact = server?.redact ?? parts.upstream.redact;
  // The same redactor for its spans, but only when there is a value to redact (holdsSecrets below).
  const spanRedact = (server?.holdsSecrets ? server.redact : undefined) ?? parts.upstream.redact;
  // Opened only now that the server is up: a start that fails earlier leaves no exporter
  // timers or open audit file behind (the supervisor retries starts).
  let audited: AuditSink | undefined;
  let observed: Awaited<ReturnType<typeof startTelemetry>>;
  let proxy: RunningServer;
  try {
    audited = policies.audit
      ? auditSink(policies.audit, parts.workloadLog ?? ctx.stderr, (message) => ctx.log.warn(message))
      : undefined;
    // As the tools warning below: `mcpmgr logs NAME` is where a user looks first (docs/telemetry.md).
    observed = await startTelemetry(policies.telemetry, spec.name, spec.limits.sessionIdleMs, (message) => {
      ctx.log.warn(message);
      parts.workloadLog?.(`mcpmgr: ${message}\n`);
    });
    const handler = await policyChain(
      parts.upstream.handler,
      {
        serverName: spec.name,
        listenHost: listen.host,
        trustProxyHeaders: listen.trustProxyHeaders,
        allowedHosts: listen.allowedHosts,
        maxBodyBytes: spec.limits.maxBodyBytes,
        maxMessageBytes: spec.limits.maxMessageBytes,
      },
      {
        // Only a workload that holds secrets redacts its spans: one that holds none pays nothing per request.
        telemetry: observed?.middleware(spanRedact ? { redact: spanRedact } : {}),
        audit:
          policies.audit && audited
            ? { config: policies.audit, write: audited.write, ...(redact ? { redact } : {}) }
            : undefined,
        authentication: [
          // Before authentication: the group's gateway gets in with its key (past this workload's own
          // --oidc-* only while a gateway that authenticates guards the group), and while a gateway with
          // policies guards the group, nobody else gets in without authentication of this workload's own.
          memberGuard({
            group: spec.group,
            key: () => readGatewayKey(ctx.paths),
            guard: () => groupGuard(ctx.paths, spec.group),
            ownAuthentication: policies.incomingAuth !== undefined,
            // No gateway serves a foreground run (it has no record): the gateway is no way in for its callers.
            ...(spec.background ? {} : { refusal: foregroundRefusal(spec) }),
          }),
          ...parts.prepared.authentication.forEndpoint(spec.endpointPath, listen),
        ],
        tools: policies.tools,
        // The console (a foreground run) or the proxy log, and the workload's log that `mcpmgr logs` shows.
        toolsWarning: (text) => {
          ctx.log.warn(`${spec.name}: ${text}`);
          parts.workloadLog?.(`mcpmgr: ${text}\n`);
        },
        authz: policies.authz,
        authzWarning: (text) => ctx.log.warn(`${spec.name}: ${text}`),
        webhooks: parts.prepared.webhooks,
      },
    );
    if (parts.listener) {
      proxy = parts.listener.server;
      proxy.setHandler(handler);
    } else {
      proxy = serve({
        host: listen.host,
        port: parts.proxyPort,
        handler,
        live: parts.live,
        onError: (err) => ctx.log.error(`request failed inside the proxy: ${errorMessage(err)}`),
      });
    }
  } catch (err) {
    // A busy port (or a telemetry/audit set-up failure) must not leave the server we just started behind.
    await server?.stop(1_000);
    await observed?.telemetry.shutdown();
    await audited?.close();
    throw err;
  }
  return {
    url: clientUrl(listen.host, proxy.port, spec.endpointPath),
    exited: parts.upstream.exited,
    holdsSecrets: server?.holdsSecrets === true || parts.upstream.redact !== undefined,
    async stop(options = {}) {
      // Every part stops even if another fails to.
      if (options.restarting && parts.listener) {
        // The port stays ours: clients are told to come back, what was under way ends with errors.
        proxy.setHandler(parts.listener.unavailable);
        await Promise.allSettled([proxy.drain(stopGraceMs, "the MCP server is restarting")]);
      } else {
        // Told (the supervisor records it for `stop`'s notice) only when the stop has requests to wait for.
        if (proxy.busy()) void options.onRequestsInProgress?.().catch(() => {});
        await Promise.allSettled([proxy.shutdown(stopGraceMs)]);
      }
      await Promise.allSettled([server?.stop(), observed?.telemetry.shutdown(), audited?.close()]);
    },
  };
}
