/**
 * Container workloads: the image made ready (pulled, verified, or built for a protocol
 * scheme), the run options turned into a hardened container (runtime/docker), and the
 * server handed to workload-runner as byte streams (stdio) or a loopback URL (HTTP).
 */
import type { ParsedRunArgv } from "../config/run-spec.ts";
import { McpmgrError } from "../errors.ts";
import { findFreePort } from "../proxy/serve.ts";
import { startServerContainer, type ContainerServer } from "../runtime/docker/container.ts";
import { defaultLimits, networkModeFor, resolveMounts, serverContainerOptions } from "../runtime/docker/container-config.ts";
import type { ContainerEngine } from "../runtime/docker/engine.ts";
import { buildPackageImage } from "../runtime/docker/image-build.ts";
import { applyVerification, ensureImage } from "../runtime/docker/images.ts";
import { validateUserLabels, workloadLabels } from "../runtime/docker/labels.ts";
import { createIsolation, SERVER_ALIAS } from "../runtime/docker/network-isolation.ts";
import { containerResourceLimits } from "./limits.ts";
import { overlaysFor } from "./overlays.ts";
import { deniesNetwork, type PermissionProfile } from "../runtime/permission-profile.ts";
import { redactor } from "../secrets/redact.ts";
import { log } from "./output.ts";
import type { RunPlan } from "./run-plan.ts";
import { profileFor, serverEnvironment } from "./server-process.ts";

type Values = ParsedRunArgv["values"];

/** Options that only mean something for a container; refused for other runtimes rather than ignored. */
export const containerOnlyOptions = ["network", "isolate-network", "allow-docker-gateway", "publish", "image-verification", "runtime-image", "runtime-add-package", "ca-cert"] as const;

export function assertNoContainerOptions(parsed: ParsedRunArgv, why: string): void {
  for (const option of containerOnlyOptions) {
    if (parsed.given.has(option)) {
      throw new McpmgrError("CONFLICTING_OPTIONS", `--${option} applies to container workloads, but ${why}`, {
        hint: "leave it out, or run with a container engine (MCPMGR_RUNTIME=docker|podman)",
      });
    }
  }
}

/** The image to run: pulled (and verified) for an image source, built and cached for a package. */
export async function prepareContainerImage(plan: RunPlan, values: Values, engine: ContainerEngine, progress: (line: string) => void): Promise<string> {
  const { source } = plan;
  if (source.kind === "image") {
    for (const option of ["runtime-image", "runtime-add-package", "ca-cert"] as const) {
      const given = option === "runtime-add-package" ? values[option].length > 0 : values[option] !== undefined;
      if (given) throw new McpmgrError("CONFLICTING_OPTIONS", `--${option} applies to npx://, uvx:// and go:// builds, not to an image`, { hint: `leave --${option} out` });
    }
    const image = await ensureImage(engine, source.ref, progress);
    applyVerification(values["image-verification"], source.ref, image, (text) => log.warn(text));
    // The ID, not the reference: the container runs exactly the content just checked, even if
    // the tag moves meanwhile (and a digest pin matched by ID is not a name the engine knows).
    return image.id;
  }
  if (source.kind !== "package") throw new McpmgrError("INTERNAL", `no image for a ${source.kind} source`);
  const built = await buildPackageImage(
    engine,
    source,
    {
      ...(values["runtime-image"] ? { runtimeImage: values["runtime-image"] } : {}),
      addPackages: values["runtime-add-package"],
      ...(values["ca-cert"] ? { caCertPath: values["ca-cert"] } : {}),
    },
    progress,
  );
  if (built.cached) log.debug(`using the cached image ${built.tag}`);
  return built.tag;
}

/**
 * What a detached `run` does in the user's terminal before the supervisor starts: the
 * image pulled or built (with progress), labels, mounts and overlays checked and printed.
 */
export async function preflightContainer(plan: RunPlan, parsed: ParsedRunArgv, engine: ContainerEngine): Promise<void> {
  validateUserLabels(parsed.values.label);
  await prepareContainerImage(plan, parsed.values, engine, (line) => log.info(line));
  const profile = await profileFor(plan, parsed.values);
  await overlaysFor(resolveMounts(profile, parsed.values.volume), parsed.values);
}

export interface LaunchedContainer {
  readonly server: ContainerServer;
  readonly redact: (text: string) => string;
  /** Where an sse/streamable-http server is reached from the host. */
  readonly target?: { readonly host: string; readonly port: number };
}

function restrictsOutbound(profile: PermissionProfile): boolean {
  const outbound = profile.network.outbound;
  return profile.network.mode !== "none" && !outbound.insecure_allow_all;
}

export async function launchContainer(plan: RunPlan, parsed: ParsedRunArgv, engine: ContainerEngine, image: string, proxyPort: number, printOverlays: boolean): Promise<LaunchedContainer> {
  const { values } = parsed;
  const transport = plan.transport ?? "stdio";
  const stdio = transport === "stdio";
  if (parsed.given.has("target-host")) {
    throw new McpmgrError("CONFLICTING_OPTIONS", "--target-host applies to servers run as local processes; a container's port is published on 127.0.0.1", { hint: "leave --target-host out" });
  }
  if (stdio && parsed.given.has("target-port")) {
    throw new McpmgrError("CONFLICTING_OPTIONS", "--target-port applies to sse and streamable-http servers", { hint: "leave it out, or give --transport" });
  }
  if (values["allow-docker-gateway"] && !values["isolate-network"]) {
    throw new McpmgrError("CONFLICTING_OPTIONS", "--allow-docker-gateway only applies with --isolate-network", { hint: "add --isolate-network, or leave --allow-docker-gateway out" });
  }
  validateUserLabels(values.label);
  const profile = await profileFor(plan, values);
  const environment = await serverEnvironment(plan, values);
  const redact = redactor(environment.secretValues);
  const mounts = resolveMounts(profile, values.volume);
  // Printed by the terminal-side run (preflight or --foreground), not again by the supervisor.
  const { overlays, emptyFile } = await overlaysFor(mounts, { ...values, "print-resolved-overlays": values["print-resolved-overlays"] && printOverlays });

  const none = deniesNetwork(profile);
  const isolate = values["isolate-network"] || (none && !stdio);
  if (isolate && values.network !== undefined) {
    throw new McpmgrError("CONFLICTING_OPTIONS", `--network ${values.network} conflicts with network isolation, which puts the server on its own internal network`, {
      hint: "leave --network out, or --isolate-network",
    });
  }
  if (!isolate && restrictsOutbound(profile) && !none) {
    log.warn("the permission profile limits outbound hosts/ports, which only --isolate-network enforces; without it the container reaches any host");
  }
  const networkMode = isolate ? "" : networkModeFor(profile, values.network);
  const hostNetwork = networkMode === "host";

  let containerPort: number | undefined;
  let hostPort: number | undefined;
  if (!stdio) {
    hostPort = hostNetwork ? (values["target-port"] ?? (await findFreePort())) : await findFreePort();
    containerPort = hostNetwork ? hostPort : (values["target-port"] ?? plan.entry?.targetPort ?? 8080);
  }
  if (values.publish.length > 0 && (hostNetwork || isolate || networkMode === "none")) {
    throw new McpmgrError("CONFLICTING_OPTIONS", "--publish needs a bridge or named network", { hint: "leave --publish out with --network host, profile none or --isolate-network" });
  }
  const labels = (role: "server" | "egress" | "network") =>
    workloadLabels({ workload: plan.name, group: values.group, transport, port: proxyPort, role, user: values.label });

  const isolation = isolate
    ? await createIsolation(engine, {
        workload: plan.name,
        labels,
        profile,
        allowGateway: values["allow-docker-gateway"],
        ...(containerPort !== undefined && hostPort !== undefined ? { ingress: { containerPort, hostPort } } : {}),
        onProgress: (line) => log.info(line),
      })
    : undefined;
  const options = serverContainerOptions({
    containerName: `mcpmgr-${plan.name}`,
    image,
    args: plan.args,
    env: {
      ...environment.env,
      ...(isolation?.proxyEnv ?? {}),
      ...(containerPort !== undefined ? { MCP_TRANSPORT: transport, MCP_PORT: String(containerPort) } : {}),
    },
    labels: labels("server"),
    stdio,
    profile,
    volumes: mounts,
    overlays,
    ...(emptyFile ? { emptyFile } : {}),
    networkMode: isolation?.networkName ?? networkMode,
    networkAlias: SERVER_ALIAS,
    publish: [
      ...(!isolate && !hostNetwork && containerPort !== undefined && hostPort !== undefined ? [{ containerPort, hostPort }] : []),
      ...values.publish.map((p) => ({ containerPort: p.containerPort, hostPort: p.hostPort })),
    ],
    limits: containerResourceLimits(defaultLimits),
  });
  const server = await startServerContainer(engine, options, stdio, async () => {
    await isolation?.remove();
  });
  return { server, redact, ...(hostPort !== undefined ? { target: { host: "127.0.0.1", port: hostPort } } : {}) };
}
