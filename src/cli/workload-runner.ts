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
import { serve } from "../proxy/serve.ts";
import { StdioBridge } from "../proxy/stdio-bridge/bridge.ts";
import { legacySseFrontEnd } from "../proxy/stdio-bridge/legacy-sse.ts";
import { lineChannel } from "../proxy/stdio-bridge/server-channel.ts";
import { streamableHttpFrontEnd } from "../proxy/stdio-bridge/streamable-http.ts";
import { loadEnvDir, loadEnvFile } from "../config/env-files.ts";
import { createSecretManager } from "../secrets/manager.ts";
import { resolvePaths } from "../state/paths.ts";
import { packageCommand } from "../runtime/package-command.ts";
import { loadPermissionProfile } from "../runtime/permission-profile.ts";
import { launchProcess, type LocalProcess } from "../runtime/process.ts";
import { bwrapArgs, findBwrap, unenforceableError } from "../runtime/sandbox.ts";
import { assertRequiredEnv, type RunPlan } from "./run-plan.ts";
import type { ParsedRunArgv } from "../config/run-spec.ts";
import { version } from "../version.ts";
import { maxBodyBytesFromEnv } from "./limits.ts";
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
  const live = new LiveStreams();
  let handler: Handler;
  let endpointPath: string;
  let child: LocalProcess | undefined;
  let serverExit: Promise<string> = new Promise(() => {});

  if (source.kind === "remote") {
    for (const local of ["env", "env-file", "env-file-dir", "secret", "volume", "permission-profile", "transport", "proxy-mode", "insecure-allow-unsandboxed"]) {
      if (parsed.given.has(local as keyof Values)) {
        throw new McpmgrError("INVALID_OPTION", `--${local} applies to servers mcpmgr starts, not to a remote URL`, { hint: `leave --${local} out` });
      }
    }
    handler = transparentForwarder({ target: source.url, endpointPrefix: values["endpoint-prefix"], trustProxyHeaders: values["trust-proxy-headers"], live });
    endpointPath = source.url.pathname;
  } else if (source.kind === "package") {
    const transport = plan.transport ?? "stdio";
    if (transport !== "stdio") {
      throw new McpmgrError("NOT_SUPPORTED_YET", `--transport ${transport} for local packages is not supported yet`, { hint: "packaged MCP servers speak stdio; leave --transport out" });
    }
    child = await launchSandboxed(packageCommand(source, plan.args), plan, values);
    const bridge = new StdioBridge({ clientInfo: { name: "mcpmgr", version }, onLog: (level, text) => log[level](`${name}: ${text}`) });
    const stderr = keepStderr(child, name, options.onServerOutput);
    const channel = lineChannel({
      stdout: child.proc.stdout,
      stdin: child.proc.stdin,
      onMessage: bridge.onServerMessage,
      onInvalidLine: (line) => log.warn(`${name}: skipped a non-JSON line on stdout: ${line.slice(0, 200)}`),
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
  } else {
    throw notSupportedSource(plan);
  }

  const server = serve({
    host: values.host,
    port: values["proxy-port"],
    handler: withBuiltinProtections(handler, { serverName: name, listenHost: values.host, trustProxyHeaders: values["trust-proxy-headers"], maxBodyBytes: maxBodyBytesFromEnv() }),
    live,
    onError: (err) => log.error(`request failed inside the proxy: ${err instanceof Error ? err.message : String(err)}`),
  });
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

/**
 * The server's environment: --env-file-dir, then --env-file, then -e (later wins),
 * then secrets, which may not collide with a plain variable.
 */
async function serverEnvironment(plan: RunPlan, values: Values): Promise<Record<string, string>> {
  const env: Record<string, string> = {
    ...plan.envDefaults,
    ...(values["env-file-dir"] ? loadEnvDir(values["env-file-dir"]) : {}),
    ...(values["env-file"] ? loadEnvFile(values["env-file"]) : {}),
    ...Object.fromEntries(values.env.map((pair) => [pair.key, pair.value])),
  };
  if (values.secret.length === 0) {
    assertRequiredEnv(plan, env);
    return env;
  }
  for (const ref of values.secret) {
    if (ref.target in env) {
      throw new McpmgrError("CONFLICTING_OPTIONS", `--secret ${ref.name},target=${ref.target} and a plain variable both set ${ref.target}`, {
        hint: "give the variable one source",
      });
    }
  }
  const secrets = await createSecretManager({ dir: resolvePaths().dataDir, env: process.env }).resolveSecretReferences(values.secret);
  assertRequiredEnv(plan, { ...env, ...secrets });
  return { ...env, ...secrets };
}

async function launchSandboxed(command: string[], plan: RunPlan, values: Values): Promise<LocalProcess> {
  const profile = values["permission-profile"] ? await loadPermissionProfile(values["permission-profile"]) : (plan.profile ?? (await loadPermissionProfile("network")));
  const env = await serverEnvironment(plan, values);
  const bwrap = findBwrap();
  if (bwrap === undefined) {
    if (!values["insecure-allow-unsandboxed"]) throw unenforceableError();
    log.warn("running the MCP server WITHOUT a sandbox (--insecure-allow-unsandboxed)");
    return launchProcess({ command, env });
  }
  const volumes = values.volume.map((v) => ({ hostPath: v.hostPath, targetPath: v.containerPath, readOnly: v.readOnly }));
  // A local project is the server's own code: visible read-only even where the sandbox hides (/tmp, $HOME).
  if (plan.source.kind === "package" && plan.source.localPath) volumes.unshift({ hostPath: plan.source.localPath, targetPath: plan.source.localPath, readOnly: true });
  return launchProcess({ command, env, sandbox: { bwrap, args: bwrapArgs({ profile, volumes }) } });
}

/** Keeps the server's stderr for error reports (and shows it with --debug). */
function keepStderr(child: LocalProcess, name: string, onOutput?: (text: string) => void): { tail: () => string; drained: Promise<void> } {
  let tail = "";
  const drained = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of child.proc.stderr) {
      const text = decoder.decode(chunk, { stream: true });
      onOutput?.(text);
      tail = (tail + text).slice(-4_000);
      for (const line of text.split("\n")) if (line.trim() !== "") log.debug(`${name} stderr: ${line}`);
    }
  })();
  return { tail: () => tail.trim().split("\n").slice(-10).join("\n"), drained };
}

export function notSupportedSource(plan: RunPlan): McpmgrError {
  const what = plan.entry ? `registry entry ${plan.entry.name} (a container image)` : "container images";
  return new McpmgrError("NOT_SUPPORTED_YET", `running ${what} is not supported yet: the container runtime is not in this version`, {
    hint: "run a package (npx://, uvx://, go://) or a remote URL",
  });
}
