/**
 * Starting a workload in this process: an image or protocol-scheme package in a container
 * (when an engine is available) or a package as a local process sandboxed by bwrap; a
 * stdio server behind the stdio bridge, an HTTP server or a remote MCP URL behind the
 * transparent forwarder. `run --foreground` and the detached supervisor both use it.
 */
import { McpmgrError } from "../errors.ts";
import { withBuiltinProtections } from "../middleware/builtin-chain.ts";
import { transparentForwarder } from "../proxy/forward.ts";
import type { Handler } from "../proxy/handler.ts";
import { LiveStreams } from "../proxy/live-streams.ts";
import { findFreePort, serve } from "../proxy/serve.ts";
import { StdioBridge } from "../proxy/stdio-bridge/bridge.ts";
import { legacySseFrontEnd } from "../proxy/stdio-bridge/legacy-sse.ts";
import { lineChannel } from "../proxy/stdio-bridge/server-channel.ts";
import { streamableHttpFrontEnd } from "../proxy/stdio-bridge/streamable-http.ts";
import { packageCommand } from "../runtime/package-command.ts";
import { allowsNetwork } from "../runtime/permission-profile.ts";
import type { RunPlan } from "./run-plan.ts";
import {
  keepStderr,
  launchSandboxed,
  processHandle,
  profileFor,
  waitForHttp,
  type ServerHandle,
} from "./server-process.ts";
import { assertNoContainerOptions, launchContainer, prepareContainerImage } from "./container-workload.ts";
import type { ContainerEngine } from "../runtime/docker/engine.ts";
import { removeWorkloadObjects } from "../runtime/docker/cleanup.ts";
import type { ParsedRunArgv } from "../config/run-spec.ts";
import { version } from "../version.ts";
import { maxBodyBytesFromEnv, requestTimeoutMsFromEnv, sessionIdleMsFromEnv } from "./limits.ts";
import { log, printResult } from "./output.ts";
import { untilSignal } from "./signals.ts";
import { prepareIncomingAuthentication } from "./incoming-auth.ts";
import { incomingAuthSpec } from "../config/incoming-auth-spec.ts";
import { toolsPolicy } from "../config/tools-policy.ts";
import { toolFilter } from "../middleware/tool-filter.ts";
import { auditConfig } from "../config/audit-config.ts";
import { auditTrail } from "../middleware/audit.ts";
import { webhookConfig } from "../config/webhook-config.ts";
import { webhooks } from "../middleware/webhooks.ts";
import { telemetrySpec, type TelemetrySpec } from "../config/telemetry-spec.ts";
import type { Telemetry } from "../telemetry/providers.ts";
import { createSecretManager } from "../secrets/manager.ts";
import { resolvePaths } from "../state/paths.ts";
import type { Middleware } from "../proxy/handler.ts";
import { assertAuditLogWritable, auditSink, type AuditSink } from "./audit-sink.ts";
import { outgoingAuthSpec } from "../config/outgoing-auth-spec.ts";
import { outgoingAuthOptions } from "../config/flags/outgoing-auth.ts";
import { prepareOutgoingAuthentication } from "./outgoing-auth.ts";

type Values = ParsedRunArgv["values"];

export interface RunningWorkload {
  /** The URL MCP clients use. */
  readonly url: string;
  /** Resolves with the reason when the server stops on its own. */
  readonly exited: Promise<string>;
  /** Graceful stop of proxy and server. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Where the server's stderr goes besides the error report (the workload log). */
  readonly onServerOutput?: (text: string) => void;
  /** Run by the detached supervisor: `run` already printed what it prints (overlays, build progress). */
  readonly supervised?: boolean;
}

export async function startWorkload(
  plan: RunPlan,
  parsed: ParsedRunArgv,
  options: StartOptions = {},
): Promise<RunningWorkload> {
  const { values } = parsed;
  const { source, name } = plan;
  // Read before anything starts, so a bad value cannot leave a server running.
  const limits = {
    requestTimeoutMs: requestTimeoutMsFromEnv(),
    sessionIdleMs: sessionIdleMsFromEnv(),
    maxBodyBytes: maxBodyBytesFromEnv(),
  };
  const live = new LiveStreams();
  let handler: Handler;
  let endpointPath: string;
  let child: ServerHandle | undefined;
  let serverExit: Promise<string> = new Promise(() => {});
  const proxyPort = values["proxy-port"] ?? (await findFreePort());
  const tools = toolsPolicy(values.tools.flat(), values["tools-override"], plan.entry?.tools);
  const audit = auditConfig(values["enable-audit"], values["audit-config"], name);
  if (audit) assertAuditLogWritable(audit);
  const hooks = await prepareWebhooks(values["webhook-config"], name);
  const authz = await cedarAuthorizationFor(values["authz-config"]);
  const telemetry = telemetrySpec(values, parsed.given, name);
  const authentication = await prepareIncomingAuthentication(incomingAuthSpec(values, parsed.given));

  if (source.kind === "remote") {
    for (const local of [
      "env",
      "env-file",
      "env-file-dir",
      "secret",
      "volume",
      "permission-profile",
      "transport",
      "proxy-mode",
      "insecure-allow-unsandboxed",
      "target-host",
      "target-port",
      "label",
      "print-resolved-overlays",
    ]) {
      if (parsed.given.has(local as keyof Values)) {
        throw new McpmgrError("INVALID_OPTION", `--${local} applies to servers mcpmgr starts, not to a remote URL`, {
          hint: `leave --${local} out`,
        });
      }
    }
    assertNoContainerOptions(parsed, "a remote URL runs nowhere locally");
    const outgoing = outgoingAuthSpec(values, parsed.given);
    if (outgoing.tokenExchange && !incomingAuthSpec(values, parsed.given)) {
      throw new McpmgrError(
        "MISSING_OPTION",
        "--token-exchange-url exchanges the client's token, so it needs incoming authentication",
        { hint: "add --oidc-issuer (and --oidc-audience)" },
      );
    }
    const upstreamFetch = await prepareOutgoingAuthentication(outgoing, source.url, name);
    handler = transparentForwarder({
      target: source.url,
      endpointPrefix: values["endpoint-prefix"],
      trustProxyHeaders: values["trust-proxy-headers"],
      live,
      ...(upstreamFetch ? { fetch: upstreamFetch } : {}),
    });
    endpointPath = source.url.pathname;
  } else {
    const remoteOnly = Object.keys(outgoingAuthOptions).find(
      (option) => parsed.given.has(option as keyof Values) && (values as Record<string, unknown>)[option] !== false,
    );
    if (remoteOnly) {
      throw new McpmgrError(
        "INVALID_OPTION",
        `--${remoteOnly} authenticates mcpmgr to a remote URL; this server runs locally`,
        { hint: `leave --${remoteOnly} out (pass credentials to a local server with -e or --secret)` },
      );
    }
    const transport = plan.transport ?? "stdio";
    const launched =
      plan.runtime.kind === "container"
        ? await launchInContainer(plan, parsed, plan.runtime.engine, proxyPort, !options.supervised)
        : await launchAsProcess(plan, parsed, transport, !options.supervised);
    child = launched.server;
    const server = child;
    if (transport !== "stdio") {
      const { host, port } = launched.target as { host: string; port: number };
      const output = keepStderr(server, name, options.onServerOutput, true);
      serverExit = server.exited.then(async (code) => {
        await Promise.race([output.drained, Bun.sleep(500)]);
        return `the MCP server exited with code ${code}${output.tail() ? `; its last output:\n${output.tail()}` : ""}`;
      });
      const listening = await Promise.race([
        waitForHttp(host, port, endpointPathFor(transport), 60_000).then(
          () => undefined,
          (err: unknown) => (err instanceof Error ? err.message : String(err)),
        ),
        serverExit,
      ]);
      if (listening !== undefined) {
        await server.stop(1_000);
        throw new McpmgrError("SERVER_FAILED", `${name} did not start listening on ${host}:${port}: ${listening}`, {
          hint: "check that the server honours MCP_PORT, or give --target-port",
        });
      }
      endpointPath = endpointPathFor(transport);
      handler = transparentForwarder({
        target: new URL(`http://${host.includes(":") ? `[${host}]` : host}:${port}${endpointPath}`),
        endpointPrefix: values["endpoint-prefix"],
        trustProxyHeaders: values["trust-proxy-headers"],
        live,
      });
    } else {
      const bridge = new StdioBridge({
        clientInfo: { name: "mcpmgr", version },
        requestTimeoutMs: limits.requestTimeoutMs,
        sessionIdleMs: limits.sessionIdleMs,
        onLog: (level, text) => log[level](`${name}: ${text}`),
      });
      const stderr = keepStderr(server, name, options.onServerOutput);
      const channel = lineChannel({
        stdout: server.stdout,
        stdin: server.stdin,
        onMessage: bridge.onServerMessage,
        onInvalidLine: (line) =>
          log.warn(`${name}: skipped a non-JSON line on stdout: ${server.redact(line).slice(0, 200)}`),
      });
      serverExit = server.exited.then(async (code) => {
        await Promise.race([stderr.drained, Bun.sleep(500)]);
        const tail = stderr.tail();
        return `the MCP server exited with code ${code}${tail ? `; its last output:\n${tail}` : ""}`;
      });
      try {
        await bridge.start(channel);
      } catch (err) {
        // Prefer the exit code and the server's own words over "exited during initialize".
        const why = await Promise.race([
          serverExit,
          Bun.sleep(1_000).then(() => (err instanceof Error ? err.message : String(err))),
        ]);
        await server.stop(1_000);
        throw new McpmgrError("SERVER_FAILED", `${name} did not complete the MCP handshake: ${why}`, {
          hint: "check the package name and arguments; run with --debug for details",
        });
      }
      if (values["proxy-mode"] === "sse") {
        log.warn("--proxy-mode sse is deprecated and will be removed; clients should use streamable-http");
        handler = legacySseFrontEnd({
          bridge,
          live,
          ...(values["endpoint-prefix"] ? { endpointPrefix: values["endpoint-prefix"] } : {}),
        });
        endpointPath = "/sse";
      } else {
        handler = streamableHttpFrontEnd({ bridge, live });
        endpointPath = "/mcp";
      }
    }
  }

  // Opened only now that the server is up: a start that fails earlier leaves no exporter
  // timers or open audit file behind (the supervisor retries starts).
  let audited: AuditSink | undefined;
  let observed: Awaited<ReturnType<typeof prepareTelemetry>>;
  let server: ReturnType<typeof serve>;
  try {
    audited = audit ? auditSink(audit, options.onServerOutput, (message) => log.warn(message)) : undefined;
    observed = await prepareTelemetry(telemetry, name, limits.sessionIdleMs);
    server = serve({
      host: values.host,
      port: proxyPort,
      handler: withBuiltinProtections(
        handler,
        {
          serverName: name,
          listenHost: values.host,
          trustProxyHeaders: values["trust-proxy-headers"],
          maxBodyBytes: limits.maxBodyBytes,
        },
        // Telemetry outermost (every request is traced and counted; /metrics needs no token),
        ...(observed ? [observed.middleware] : []),
        // then audit (it records what the policies deny), then authentication (a refused
        // client learns nothing more), then the tool policy.
        ...(audit && audited
          ? [auditTrail({ config: audit, write: audited.write, ...(child ? { redact: child.redact } : {}) })]
          : []),
        ...authentication.forEndpoint(endpointPath, values["trust-proxy-headers"]),
        ...(tools ? [toolFilter(tools)] : []),
        // Authorization decides on the server's tool names (after the renames).
        ...(authz ? [authz] : []),
        // Webhooks see what reaches the server: after the tool policy's refusals and renames.
        ...(hooks ? [hooks] : []),
      ),
      live,
      onError: (err) =>
        log.error(`request failed inside the proxy: ${err instanceof Error ? err.message : String(err)}`),
    });
  } catch (err) {
    // A busy port (or a telemetry/audit set-up failure) must not leave the server we just started behind.
    await child?.stop(1_000);
    await observed?.telemetry.shutdown();
    await audited?.close();
    throw err;
  }
  const base = new URL(server.url);
  if (base.hostname === "0.0.0.0") base.hostname = "127.0.0.1";
  const running = child;
  return {
    url: new URL(endpointPath, base).href,
    exited: serverExit,
    async stop() {
      // Every part stops even if another fails to.
      await Promise.allSettled([server.shutdown()]);
      await Promise.allSettled([running?.stop(), observed?.telemetry.shutdown(), audited?.close()]);
    },
  };
}

/** Telemetry, loaded only when configured: without it none of OpenTelemetry is imported. */
async function prepareTelemetry(
  spec: TelemetrySpec | undefined,
  name: string,
  sessionIdleMs: number,
): Promise<{ middleware: Middleware; telemetry: Telemetry } | undefined> {
  if (spec === undefined) return undefined;
  const [{ startTelemetry }, { telemetryMiddleware }] = await Promise.all([
    import("../telemetry/providers.ts"),
    import("../middleware/telemetry.ts"),
  ]);
  const telemetry = startTelemetry(spec, version);
  return { telemetry, middleware: telemetryMiddleware(spec, telemetry, name, sessionIdleMs) };
}

/**
 * The Cedar authorization middleware, loaded only with --authz-config: the Cedar engine is
 * WebAssembly that takes ~100 ms to compile, a delay `run` would otherwise show every time.
 */
async function cedarAuthorizationFor(path: string | undefined): Promise<Middleware | undefined> {
  if (path === undefined) return undefined;
  const [{ authzConfig }, { cedarAuthorization }] = await Promise.all([
    import("../config/authz-config.ts"),
    import("../middleware/authz.ts"),
  ]);
  const config = authzConfig(path);
  return config && cedarAuthorization(config);
}

/** The webhook middleware, with HMAC secrets resolved now so a missing one fails at start-up. */
async function prepareWebhooks(files: readonly string[], serverName: string): Promise<Middleware | undefined> {
  const config = webhookConfig(files);
  if (config === undefined) return undefined;
  const refs = [...config.mutating, ...config.validating]
    .map((hook) => hook.hmacSecretRef)
    .filter((ref): ref is string => ref !== undefined);
  const hmacSecrets = new Map<string, string>();
  if (refs.length > 0) {
    const secrets = createSecretManager({ dir: resolvePaths().dataDir, env: process.env });
    for (const ref of new Set(refs)) hmacSecrets.set(ref, (await secrets.resolveSecret(ref)).reveal());
  }
  return webhooks({ config, hmacSecrets, serverName, onFailure: (text) => log.warn(text) });
}

function endpointPathFor(transport: "sse" | "streamable-http"): string {
  return transport === "sse" ? "/sse" : "/mcp";
}

interface Launched {
  readonly server: ServerHandle;
  /** Where an sse/streamable-http server listens. */
  readonly target?: { readonly host: string; readonly port: number };
}

async function launchAsProcess(
  plan: RunPlan,
  parsed: ParsedRunArgv,
  transport: "stdio" | "sse" | "streamable-http",
  printOverlays: boolean,
): Promise<Launched> {
  const { values } = parsed;
  const { source } = plan;
  if (source.kind !== "package")
    throw new McpmgrError("INTERNAL", `the process runtime cannot run a ${source.kind} source`);
  assertNoContainerOptions(
    parsed,
    "this server runs as a local process (no container engine, or MCPMGR_RUNTIME=process)",
  );
  const profile = await profileFor(plan, values);
  if (transport === "stdio")
    return {
      server: processHandle(
        await launchSandboxed(packageCommand(source, plan.args), plan, values, profile, {}, printOverlays),
      ),
    };
  // An HTTP server: started with MCP_TRANSPORT/MCP_PORT, forwarded to transparently.
  if (!allowsNetwork(profile)) {
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      `--transport ${transport} needs a network, but the permission profile allows none`,
      {
        hint: "use --permission-profile network, a stdio server, or a container runtime (which isolates it instead)",
      },
    );
  }
  const port = values["target-port"] ?? (await findFreePort());
  const host = values["target-host"];
  const child = await launchSandboxed(
    packageCommand(source, plan.args),
    plan,
    values,
    profile,
    { MCP_TRANSPORT: transport, MCP_PORT: String(port) },
    printOverlays,
  );
  return { server: processHandle(child), target: { host, port } };
}

async function launchInContainer(
  plan: RunPlan,
  parsed: ParsedRunArgv,
  engine: ContainerEngine,
  proxyPort: number,
  interactive: boolean,
): Promise<Launched> {
  const image = await prepareContainerImage(plan, parsed.values, engine, (line) =>
    interactive ? log.info(line) : log.debug(line),
  );
  const launched = await launchContainer(plan, parsed, engine, image, proxyPort, interactive);
  const container = launched.server;
  return {
    server: {
      stdout: container.stdout,
      stderr: container.stderr,
      stdin: container.stdin,
      exited: container.exited,
      redact: launched.redact,
      stop: (graceMs) => container.stop(graceMs),
    },
    ...(launched.target ? { target: launched.target } : {}),
  };
}

/** `mcpmgr run --foreground`: blocks until Ctrl-C or until the server exits. */
export async function runForeground(plan: RunPlan, parsed: ParsedRunArgv): Promise<number> {
  const name = plan.name;
  // Listened for from the start: Ctrl-C during a pull, build or handshake must not leave a
  // container running (a stdio container keeps its stdin open and would never exit).
  const signal = untilSignal();
  const started = await Promise.race([
    startWorkload(plan, parsed).then((workload) => ({ workload })),
    signal.then((received) => ({ received })),
  ]);
  if ("received" in started) {
    if (plan.runtime.kind === "container") await removeWorkloadObjects(plan.runtime.engine, name).catch(() => {});
    log.info(`${started.received}: stopped ${name} while it was starting`);
    return started.received === "SIGINT" ? 130 : 143;
  }
  const { workload } = started;
  log.info(`${name} is running; MCP clients connect to:`);
  printResult(workload.url);
  const outcome = await Promise.race([
    signal.then((received) => ({ signal: received })),
    workload.exited.then((why) => ({ why })),
  ]);
  await workload.stop();
  if ("why" in outcome) {
    log.error(`${name}: ${outcome.why}`);
    return 1;
  }
  log.info(`${outcome.signal}: stopped ${name}`);
  return 0;
}
