/**
 * The server process of a local workload: its environment (registry defaults, env files,
 * -e, secrets), the sandbox it runs in, and its stderr kept for logs and error reports.
 */
import { loadEnvDir, loadEnvFile } from "../config/env-files.ts";
import type { ParsedRunArgv } from "../config/run-spec.ts";
import { McpmgrError } from "../errors.ts";
import { loadPermissionProfile, type PermissionProfile } from "../runtime/permission-profile.ts";
import { packageWorkingDir } from "../runtime/package-command.ts";
import { launchProcess, type LocalProcess } from "../runtime/process.ts";
import { findBwrap, profileMount, unenforceableError } from "../runtime/sandbox.ts";
import { launchInSandbox } from "../runtime/sandbox-launch.ts";
import { mcpmgrProtectedDirs } from "../runtime/host-paths.ts";
import { assertRegistryMounts } from "../runtime/mount-policy.ts";
import { processGrantSummary } from "../runtime/grant-summary.ts";
import { homedir } from "node:os";
import { resolve } from "node:path";
import { overlaysFor } from "./overlays.ts";
import { createSecretManager } from "../secrets/manager.ts";
import { redactor } from "../secrets/redact.ts";
import { resolvePaths } from "../state/paths.ts";
import { log } from "./output.ts";
import { assertRequiredEnv, type RunPlan } from "./run-plan.ts";

type Values = ParsedRunArgv["values"];

export async function profileFor(plan: RunPlan, values: Values): Promise<PermissionProfile> {
  if (values["allow-registry-mount"].length > 0 && (plan.entry === undefined || values["permission-profile"])) {
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      "--allow-registry-mount grants a registry entry's own mounts; this run uses no registry entry's profile",
      { hint: "leave it out, or mount the path yourself with -v" },
    );
  }
  if (values["permission-profile"]) return loadPermissionProfile(values["permission-profile"]);
  if (plan.entry && plan.profile) {
    // Third-party input: its mounts are checked before anything uses them.
    assertRegistryMounts(plan.entry.name, plan.profile, values["allow-registry-mount"], {
      home: homedir(),
      protectedDirs: mcpmgrProtectedDirs(),
    });
  }
  return plan.profile ?? loadPermissionProfile("network");
}

/** Where the profile's grants come from, for the summary `run` prints. */
export function profileOrigin(plan: RunPlan, values: Values): string {
  if (values["permission-profile"]) return `--permission-profile ${values["permission-profile"]}`;
  return plan.entry ? `registry entry ${plan.entry.name}` : "default profile";
}

/** What the sandboxed server gets, printed by `run` before it starts (foreground, or before the supervisor). */
export function printProcessGrants(plan: RunPlan, values: Values, profile: PermissionProfile, command: string[]): void {
  const source = plan.source.kind === "package" ? plan.source : undefined;
  log.info(
    processGrantSummary({
      workload: plan.name,
      profile,
      origin: profileOrigin(plan, values),
      volumes: values.volume,
      command,
      cwd: (source && packageWorkingDir(source)) ?? process.cwd(),
      ...(source?.localPath ? { localPackage: source.localPath } : {}),
      home: homedir(),
    }),
  );
}

/**
 * The server's environment: --env-file-dir, then --env-file, then -e (later wins),
 * then secrets, which may not collide with a plain variable.
 */
export async function serverEnvironment(
  plan: RunPlan,
  values: Values,
): Promise<{ env: Record<string, string>; secretValues: string[] }> {
  const env: Record<string, string> = {
    ...plan.envDefaults,
    ...(values["env-file-dir"] ? loadEnvDir(values["env-file-dir"]) : {}),
    ...(values["env-file"] ? loadEnvFile(values["env-file"]) : {}),
    ...Object.fromEntries(values.env.map((pair) => [pair.key, pair.value])),
  };
  if (values.secret.length === 0) {
    assertRequiredEnv(plan, env);
    return { env, secretValues: [] };
  }
  for (const ref of values.secret) {
    if (ref.target in env) {
      throw new McpmgrError(
        "CONFLICTING_OPTIONS",
        `--secret ${ref.name},target=${ref.target} and a plain variable both set ${ref.target}`,
        {
          hint: "give the variable one source",
        },
      );
    }
  }
  const secrets = await createSecretManager({ dir: resolvePaths().dataDir, env: process.env }).resolveSecretReferences(
    values.secret,
  );
  assertRequiredEnv(plan, { ...env, ...secrets });
  return { env: { ...env, ...secrets }, secretValues: Object.values(secrets) };
}

/** A server process plus what must never appear in its logs. */
export interface ServerProcess extends LocalProcess {
  /** Replaces secret values in text from the server (its stderr may echo its environment). */
  readonly redact: (text: string) => string;
}

export async function launchSandboxed(
  command: string[],
  plan: RunPlan,
  values: Values,
  profile: PermissionProfile,
  extraEnv: Readonly<Record<string, string>> = {},
  printOverlays = true,
): Promise<ServerProcess> {
  const environment = await serverEnvironment(plan, values);
  const env = { ...environment.env, ...extraEnv };
  const redact = redactor(environment.secretValues);
  const bwrap = findBwrap();
  if (restrictsOutbound(profile)) {
    // bubblewrap can give all of the network or none of it, not a host/port allow-list.
    if (!values["insecure-allow-unsandboxed"]) {
      throw new McpmgrError(
        "SANDBOX_UNAVAILABLE",
        "the process runtime cannot limit outbound connections to the profile's allow_host/allow_port",
        {
          hint: "pass --insecure-allow-unsandboxed to accept unrestricted network for this server, or use permission profile none",
        },
      );
    }
    log.warn(
      "the permission profile limits outbound hosts/ports; the process runtime cannot, so the server gets the whole network (--insecure-allow-unsandboxed)",
    );
  }
  if (bwrap === undefined) {
    if (!values["insecure-allow-unsandboxed"]) throw unenforceableError();
    log.warn("running the MCP server WITHOUT a sandbox (--insecure-allow-unsandboxed)");
    const cwd = plan.source.kind === "package" ? packageWorkingDir(plan.source) : undefined;
    return { ...launchProcess({ command, env, ...(cwd ? { cwd } : {}) }), redact };
  }
  const volumes = values.volume.map((v) => ({
    hostPath: v.hostPath,
    targetPath: v.containerPath,
    readOnly: v.readOnly,
  }));
  // A local project is the server's own code: visible read-only even where the sandbox hides (/tmp, $HOME).
  if (plan.source.kind === "package" && plan.source.localPath)
    volumes.unshift({ hostPath: plan.source.localPath, targetPath: plan.source.localPath, readOnly: true });
  const cwd = plan.source.kind === "package" ? (packageWorkingDir(plan.source) ?? process.cwd()) : process.cwd();
  if (printOverlays) printProcessGrants(plan, values, profile, command);
  const { overlays, emptyFile } = await processOverlays(profile, values, printOverlays);
  const child = await launchInSandbox({
    bwrap,
    command,
    env,
    cwd,
    profile,
    volumes,
    overlays,
    ...(emptyFile ? { emptyFile } : {}),
  });
  return { ...child, redact };
}

/** A started MCP server, whatever runs it: byte streams, exit and stop. */
export interface ServerHandle {
  /** The MCP protocol for stdio servers; plain output for HTTP servers. */
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  readonly stdin: { write(data: string): unknown; flush?(): unknown };
  readonly exited: Promise<number | null>;
  readonly redact: (text: string) => string;
  stop(graceMs?: number): Promise<unknown>;
}

export function processHandle(child: ServerProcess): ServerHandle {
  return {
    stdout: child.proc.stdout,
    stderr: child.proc.stderr,
    stdin: child.proc.stdin,
    exited: child.proc.exited,
    redact: child.redact,
    stop: (graceMs) => child.stop(graceMs),
  };
}

/** Ignore-pattern overlays over the sandbox's mounts (profile read/write lists and -v volumes). */
export async function processOverlays(
  profile: PermissionProfile,
  values: Values,
  print: boolean,
): ReturnType<typeof overlaysFor> {
  const home = homedir();
  const mounted = [
    ...profile.read.map((spec) => profileMount(spec, true)),
    ...profile.write.map((spec) => profileMount(spec, false)),
    ...values.volume.map((v) => ({ hostPath: v.hostPath, targetPath: v.containerPath, readOnly: v.readOnly })),
  ].map((m) => ({
    hostPath: resolve(m.hostPath.replace(/^~(?=\/|$)/, home)),
    containerPath: resolve(m.targetPath.replace(/^~(?=\/|$)/, home)),
  }));
  return overlaysFor(mounted, { ...values, "print-resolved-overlays": values["print-resolved-overlays"] && print });
}

/**
 * Keeps the server's stderr (and stdout, for HTTP servers, where it is not the protocol)
 * for the workload log, error reports and --debug, with secret values redacted.
 */
export function keepStderr(
  child: ServerHandle,
  name: string,
  onOutput?: (text: string) => void,
  includeStdout = false,
): { tail: () => string; drained: Promise<void> } {
  let tail = "";
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    let partial = "";
    const emit = (raw: string) => {
      // Whole lines only, so a secret split across two reads is still recognised.
      const text = child.redact(raw);
      onOutput?.(text);
      tail = (tail + text).slice(-4_000);
      for (const line of text.split("\n")) if (line.trim() !== "") log.debug(`${name} stderr: ${line}`);
    };
    for await (const chunk of stream) {
      partial += decoder.decode(chunk, { stream: true });
      const end = partial.lastIndexOf("\n");
      if (end === -1) continue;
      emit(partial.slice(0, end + 1));
      partial = partial.slice(end + 1);
    }
    if (partial !== "") emit(partial);
  };
  const drained = Promise.all([drain(child.stderr), includeStdout ? drain(child.stdout) : undefined]).then(() => {});
  return { tail: () => tail.trim().split("\n").slice(-10).join("\n"), drained };
}

/**
 * Resolves once an HTTP server answers on host:port (any status). A TCP accept is not
 * enough: a container's published port is accepted by the engine's port proxy before the
 * server inside listens, and those early connections are reset.
 */
export async function waitForHttp(
  host: string,
  port: number,
  path: string,
  timeoutMs: number,
  unix?: string,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}${path}`;
  while (performance.now() < deadline) {
    const controller = new AbortController();
    const answered = await fetch(url, {
      signal: AbortSignal.any([controller.signal, AbortSignal.timeout(2_000)]),
      ...(unix ? { unix } : {}),
    }).then(
      () => true,
      () => false,
    );
    // Headers are enough; an SSE endpoint would otherwise keep streaming.
    controller.abort();
    if (answered) return;
    await Bun.sleep(100);
  }
  throw new McpmgrError("SERVER_FAILED", `no HTTP answer on ${host}:${port} after ${timeoutMs / 1000} s`, {
    hint: "check that the server honours MCP_PORT, or give --target-port",
  });
}

/** A profile that allows some outbound traffic but not all of it. */
function restrictsOutbound(profile: PermissionProfile): boolean {
  const outbound = profile.network.outbound;
  return (
    profile.network.mode !== "none" &&
    !outbound.insecure_allow_all &&
    (outbound.allow_host.length > 0 || outbound.allow_port.length > 0)
  );
}
