/**
 * Starting a workload in this process: a protocol-scheme package as a local stdio
 * process (sandboxed by bwrap) behind the stdio bridge, or a remote MCP URL behind the
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
import { keepStderr, launchSandboxed, profileFor, waitForPort, type ServerProcess } from "./server-process.ts";
import type { ParsedRunArgv } from "../config/run-spec.ts";
import { version } from "../version.ts";
import { maxBodyBytesFromEnv, requestTimeoutMsFromEnv, sessionIdleMsFromEnv } from "./limits.ts";
import { log, printResult } from "./output.ts";
import { untilSignal } from "./signals.ts";

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
}

export async function startWorkload(plan: RunPlan, parsed: ParsedRunArgv, options: StartOptions = {}): Promise<RunningWorkload> {
  const { values } = parsed;
  const { source, name } = plan;
  // Read before anything starts, so a bad value cannot leave a server running.
  const limits = { requestTimeoutMs: requestTimeoutMsFromEnv(), sessionIdleMs: sessionIdleMsFromEnv(), maxBodyBytes: maxBodyBytesFromEnv() };
  const live = new LiveStreams();
  let handler: Handler;
  let endpointPath: string;
  let child: ServerProcess | undefined;
  let serverExit: Promise<string> = new Promise(() => {});

  if (source.kind === "remote") {
    for (const local of ["env", "env-file", "env-file-dir", "secret", "volume", "permission-profile", "transport", "proxy-mode", "insecure-allow-unsandboxed", "target-host", "target-port"]) {
      if (parsed.given.has(local as keyof Values)) {
        throw new McpmgrError("INVALID_OPTION", `--${local} applies to servers mcpmgr starts, not to a remote URL`, { hint: `leave --${local} out` });
      }
    }
    handler = transparentForwarder({ target: source.url, endpointPrefix: values["endpoint-prefix"], trustProxyHeaders: values["trust-proxy-headers"], live });
    endpointPath = source.url.pathname;
  } else if (source.kind === "package") {
    const transport = plan.transport ?? "stdio";
    const profile = await profileFor(plan, values);
    if (transport !== "stdio") {
      // An HTTP server: started with MCP_TRANSPORT/MCP_PORT, forwarded to transparently.
      if (!allowsNetwork(profile)) {
        throw new McpmgrError("CONFLICTING_OPTIONS", `--transport ${transport} needs a network, but the permission profile allows none`, {
          hint: "use --permission-profile network, or a stdio server",
        });
      }
      const port = values["target-port"] ?? (await findFreePort());
      const host = values["target-host"];
      child = await launchSandboxed(packageCommand(source, plan.args), plan, values, profile, { MCP_TRANSPORT: transport, MCP_PORT: String(port) });
      const output = keepStderr(child, name, options.onServerOutput, true);
      const running = child;
      serverExit = child.proc.exited.then(async (code) => {
        await Promise.race([output.drained, Bun.sleep(500)]);
        return `the MCP server exited with code ${code}${output.tail() ? `; its last output:\n${output.tail()}` : ""}`;
      });
      const listening = await Promise.race([
        waitForPort(host, port, 60_000).then(
          () => undefined,
          (err: unknown) => (err instanceof Error ? err.message : String(err)),
        ),
        serverExit,
      ]);
      if (listening !== undefined) {
        await running.stop(1_000);
        throw new McpmgrError("SERVER_FAILED", `${name} did not start listening on ${host}:${port}: ${listening}`, { hint: "check that the server honours MCP_PORT, or give --target-port" });
      }
      endpointPath = transport === "sse" ? "/sse" : "/mcp";
      handler = transparentForwarder({
        target: new URL(`http://${host.includes(":") ? `[${host}]` : host}:${port}${endpointPath}`),
        endpointPrefix: values["endpoint-prefix"],
        trustProxyHeaders: values["trust-proxy-headers"],
        live,
      });
    } else {
      child = await launchSandboxed(packageCommand(source, plan.args), plan, values, profile);
      const bridge = new StdioBridge({
        clientInfo: { name: "mcpmgr", version },
        requestTimeoutMs: limits.requestTimeoutMs,
        sessionIdleMs: limits.sessionIdleMs,
        onLog: (level, text) => log[level](`${name}: ${text}`),
      });
      const stderr = keepStderr(child, name, options.onServerOutput);
      const channel = lineChannel({
        stdout: child.proc.stdout,
        stdin: child.proc.stdin,
        onMessage: bridge.onServerMessage,
        onInvalidLine: (line) => log.warn(`${name}: skipped a non-JSON line on stdout: ${(child as ServerProcess).redact(line).slice(0, 200)}`),
      });
      serverExit = child.proc.exited.then(async (code) => {
        await Promise.race([stderr.drained, Bun.sleep(500)]);
        const tail = stderr.tail();
        return `the MCP server exited with code ${code}${tail ? `; its last output:\n${tail}` : ""}`;
      });
      try {
        await bridge.start(channel);
      } catch (err) {
        // Prefer the exit code and the server's own words over "exited during initialize".
        const why = await Promise.race([serverExit, Bun.sleep(1_000).then(() => (err instanceof Error ? err.message : String(err)))]);
        await child.stop(1_000);
        throw new McpmgrError("SERVER_FAILED", `${name} did not complete the MCP handshake: ${why}`, {
          hint: "check the package name and arguments; run with --debug for details",
        });
      }
      if (values["proxy-mode"] === "sse") {
        log.warn("--proxy-mode sse is deprecated and will be removed; clients should use streamable-http");
        handler = legacySseFrontEnd({ bridge, live, ...(values["endpoint-prefix"] ? { endpointPrefix: values["endpoint-prefix"] } : {}) });
        endpointPath = "/sse";
      } else {
        handler = streamableHttpFrontEnd({ bridge, live });
        endpointPath = "/mcp";
      }
    }
  } else {
    throw notSupportedSource(plan);
  }

  let server: ReturnType<typeof serve>;
  try {
    server = serve({
      host: values.host,
      port: values["proxy-port"],
      handler: withBuiltinProtections(handler, { serverName: name, listenHost: values.host, trustProxyHeaders: values["trust-proxy-headers"], maxBodyBytes: limits.maxBodyBytes }),
      live,
      onError: (err) => log.error(`request failed inside the proxy: ${err instanceof Error ? err.message : String(err)}`),
    });
  } catch (err) {
    // A busy port must not leave the server we just started behind.
    await child?.stop(1_000);
    throw err;
  }
  const base = new URL(server.url);
  if (base.hostname === "0.0.0.0") base.hostname = "127.0.0.1";
  const running = child;
  return {
    url: new URL(endpointPath, base).href,
    exited: serverExit,
    async stop() {
      await server.shutdown();
      await running?.stop();
    },
  };
}

/** `mcpmgr run --foreground`: blocks until Ctrl-C or until the server exits. */
export async function runForeground(plan: RunPlan, parsed: ParsedRunArgv): Promise<number> {
  const name = plan.name;
  const workload = await startWorkload(plan, parsed);
  log.info(`${name} is running; MCP clients connect to:`);
  printResult(workload.url);
  const outcome = await Promise.race([untilSignal().then((signal) => ({ signal })), workload.exited.then((why) => ({ why }))]);
  await workload.stop();
  if ("why" in outcome) {
    log.error(`${name}: ${outcome.why}`);
    return 1;
  }
  log.info(`${outcome.signal}: stopped ${name}`);
  return 0;
}

export function notSupportedSource(plan: RunPlan): McpmgrError {
  const what = plan.entry ? `registry entry ${plan.entry.name} (a container image)` : "container images";
  return new McpmgrError("NOT_SUPPORTED_YET", `running ${what} is not supported yet: the container runtime is not in this version`, {
    hint: "run a package (npx://, uvx://, go://) or a remote URL",
  });
}
