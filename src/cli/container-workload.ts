/**
 * Container workloads: the image made ready (pulled, verified, or built for a protocol
 * scheme), the run options turned into a hardened container (runtime/docker), and the
 * server handed to workload-runner as byte streams (stdio) or a loopback URL (HTTP).
 */
import type { ParsedRunArgv } from "../config/run-spec.ts";
import { McpmgrError } from "../errors.ts";
import { findFreePort, portInUse } from "../proxy/serve.ts";
import { startServerContainer, type ContainerServer } from "../runtime/docker/container.ts";
import {
  defaultLimits,
  mcpmgrDirsUnder,
  networkModeFor,
  resolveMounts,
  serverContainerOptions,
  serverPortFor,
} from "../runtime/docker/container-config.ts";
import type { ContainerEngine } from "../runtime/docker/engine.ts";
import { buildPackageImage } from "../runtime/docker/image-build.ts";
import { applyVerification, ensureImage, inspectLocalImage } from "../runtime/docker/images.ts";
import { validateUserLabels, workloadFilter, workloadLabels } from "../runtime/docker/labels.ts";
import { WorkloadStore } from "../state/workloads.ts";
import { removeWorkloadObjects } from "../runtime/docker/cleanup.ts";
import { loadGlobalIgnorePatterns } from "../runtime/ignore-overlays.ts";
import { resolvePaths } from "../state/paths.ts";
import {
  createIsolation,
  INGRESS_SOCKET,
  ingressSocketDir,
  SERVER_ALIAS,
} from "../runtime/docker/network-isolation.ts";
import { join } from "node:path";
import { containerResourceLimits } from "./limits.ts";
import { overlaysFor } from "./overlays.ts";
import { deniesNetwork, type PermissionProfile } from "../runtime/permission-profile.ts";
import { redactor } from "../secrets/redact.ts";
import { log } from "./output.ts";
import type { RunPlan } from "./run-plan.ts";
import { profileFor, profileOrigin, serverEnvironment } from "./server-process.ts";
import { containerGrantSummary } from "../runtime/grant-summary.ts";
import { homedir } from "node:os";

type Values = ParsedRunArgv["values"];

/** The server port in a container when neither the user, the registry entry nor the image names one. */
const DEFAULT_SERVER_PORT = 8080;

/** Options that only mean something for a container; refused for other runtimes rather than ignored. */
export const containerOnlyOptions = [
  "network",
  "isolate-network",
  "allow-docker-gateway",
  "publish",
  "image-verification",
  "runtime-image",
  "runtime-add-package",
  "ca-cert",
] as const;

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
export async function prepareContainerImage(
  plan: RunPlan,
  values: Values,
  engine: ContainerEngine,
  progress: (line: string) => void,
): Promise<string> {
  const { source } = plan;
  if (source.kind === "image") {
    for (const option of ["runtime-image", "runtime-add-package", "ca-cert"] as const) {
      const given = option === "runtime-add-package" ? values[option].length > 0 : values[option] !== undefined;
      if (given)
        throw new McpmgrError(
          "CONFLICTING_OPTIONS",
          `--${option} applies to npx://, uvx:// and go:// builds, not to an image`,
          { hint: `leave --${option} out` },
        );
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
      ignorePatterns: values["ignore-globally"] ? await loadGlobalIgnorePatterns(resolvePaths().configDir) : [],
    },
    progress,
    // --image-verification covers what the build starts from, the base images, also when the
    // image is cached (it may have been built under a weaker mode); no pull is needed then.
    async (bases, cached) => {
      if (values["image-verification"] === "disabled") return;
      for (const base of bases) {
        const image = cached ? await inspectLocalImage(engine, base) : await ensureImage(engine, base, progress);
        applyVerification(values["image-verification"], base, image, (text) => log.warn(`base image: ${text}`));
      }
    },
  );
  if (built.cached) log.debug(`using the cached image ${built.tag}`);
  return built.tag;
}

/**
 * `run --foreground NAME` replaces nothing: the name must not belong to a workload in the
 * store, nor to containers another foreground run is using (their containers carry it).
 */
export async function assertContainerNameFree(plan: RunPlan, engine: ContainerEngine): Promise<void> {
  const hint = "choose another --name, or stop the other one first";
  if (await new WorkloadStore(resolvePaths()).get(plan.name)) {
    throw new McpmgrError("WORKLOAD_EXISTS", `a workload named ${plan.name} already exists`, { hint });
  }
  const running = await engine.docker
    .listContainers({ filters: JSON.stringify({ ...workloadFilter(plan.name), status: ["running"] }) })
    .catch(() => []);
  if (running.length > 0) {
    throw new McpmgrError(
      "WORKLOAD_EXISTS",
      `containers of a workload named ${plan.name} are already running (another 'mcpmgr run --foreground'?)`,
      { hint },
    );
  }
}

/**
 * What a detached `run` does in the user's terminal before the supervisor starts: the
 * image pulled or built (with progress), labels, mounts and overlays checked and printed.
 */
export async function preflightContainer(plan: RunPlan, parsed: ParsedRunArgv, engine: ContainerEngine): Promise<void> {
  const settings = await containerSettings(plan, parsed);
  printContainerGrants(plan, parsed.values, settings, engine);
  containerResourceLimits(defaultLimits);
  await serverEnvironment(plan, parsed.values);
  await prepareContainerImage(plan, parsed.values, engine, (line) => log.info(line));
  await overlaysFor(settings.mounts, parsed.values);
}

export interface LaunchedContainer {
  readonly server: ContainerServer;
  readonly redact: (text: string) => string;
  /** Where an sse/streamable-http server is reached from the host (through `unix` when set). */
  readonly target?: { readonly host: string; readonly port: number; readonly unix?: string };
}

function restrictsOutbound(profile: PermissionProfile): boolean {
  const outbound = profile.network.outbound;
  return profile.network.mode !== "none" && !outbound.insecure_allow_all;
}

/** What a container workload's options mean, every combination that cannot work refused up front. */
interface ContainerSettings {
  readonly transport: "stdio" | "sse" | "streamable-http";
  readonly profile: PermissionProfile;
  readonly mounts: ReturnType<typeof resolveMounts>;
  /** Container paths where a mount would show mcpmgr's own directories. */
  readonly hiddenDirs: readonly string[];
  readonly isolate: boolean;
  /** "" when isolated (the internal network is made at launch). */
  readonly networkMode: string;
}

async function containerSettings(plan: RunPlan, parsed: ParsedRunArgv): Promise<ContainerSettings> {
  const { values } = parsed;
  const transport = plan.transport ?? "stdio";
  const stdio = transport === "stdio";
  if (parsed.given.has("target-host")) {
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      "--target-host applies to servers run as local processes; a container's port is published on 127.0.0.1",
      { hint: "leave --target-host out" },
    );
  }
  if (stdio && parsed.given.has("target-port")) {
    throw new McpmgrError("CONFLICTING_OPTIONS", "--target-port applies to sse and streamable-http servers", {
      hint: "leave it out, or give --transport",
    });
  }
  if (values["allow-docker-gateway"] && !values["isolate-network"]) {
    throw new McpmgrError("CONFLICTING_OPTIONS", "--allow-docker-gateway only applies with --isolate-network", {
      hint: "add --isolate-network, or leave --allow-docker-gateway out",
    });
  }
  validateUserLabels(values.label);
  const profile = await profileFor(plan, values);
  assertProfileAccepted(profile, plan, values);
  // An HTTP server is reached only through mcpmgr's proxy: it gets an internal network of its
  // own (reached through the helper's relay) unless the user chose its network or published ports.
  // (Docker only: Podman's internal networks keep an address on the host's side, so they would
  // not keep host processes out; there the port stays published on loopback, with a warning.)
  const httpIsolated =
    !stdio && (deniesNetwork(profile) || (!choosesNetwork(profile, values) && isolatesHttpServers(plan)));
  const isolate = values["isolate-network"] || httpIsolated;
  if (isolate && values.network !== undefined) {
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      `--network ${values.network} conflicts with network isolation, which puts the server on its own internal network`,
      {
        hint: "leave --network out, or --isolate-network",
      },
    );
  }
  const networkMode = isolate ? "" : networkModeFor(profile, values.network);
  if (!stdio && (networkMode === "none" || networkMode.startsWith("container:"))) {
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      `--transport ${transport} needs a network the proxy can reach, not --network ${networkMode}`,
      {
        hint: "use profile none (mcpmgr then isolates the server and relays to it), or another network",
      },
    );
  }
  if (values.publish.length > 0 && (networkMode === "host" || isolate || networkMode === "none")) {
    throw new McpmgrError("CONFLICTING_OPTIONS", "--publish needs a bridge or named network", {
      hint: "leave --publish out with --network host, profile none or --isolate-network",
    });
  }
  const mounts = resolveMounts(profile, values.volume);
  return { transport, profile, mounts, hiddenDirs: mcpmgrDirsUnder(mounts), isolate, networkMode };
}

/** What the container gets, printed by `run` before it starts (foreground, or before the supervisor). */
function printContainerGrants(
  plan: RunPlan,
  values: Values,
  settings: ContainerSettings,
  engine: ContainerEngine,
): void {
  log.info(
    containerGrantSummary({
      workload: plan.name,
      engine: engine.kind,
      profile: settings.profile,
      origin: profileOrigin(plan, values),
      volumes: values.volume,
      publish: values.publish,
      privateHttp: settings.transport !== "stdio" && settings.isolate,
      isolated: settings.isolate,
      networkMode: settings.networkMode,
      home: homedir(),
    }),
  );
}

/** Whether the engine's internal networks leave the host without a route to them (Docker's inhibit_ipv4). */
function isolatesHttpServers(plan: RunPlan): boolean {
  return plan.runtime.kind === "container" && plan.runtime.engine.kind === "docker";
}

/** The user (or the profile) picked the container's network or published its ports: no automatic isolation. */
function choosesNetwork(profile: PermissionProfile, values: Values): boolean {
  const mode = profile.network.mode ?? "";
  return values.network !== undefined || values.publish.length > 0 || (mode !== "" && mode !== "none");
}

/**
 * A registry entry (possibly from a custom registry file or URL) cannot grant itself more
 * than a container: privileged mode or the host's network need the user's own profile.
 */
function assertProfileAccepted(profile: PermissionProfile, plan: RunPlan, values: Values): void {
  const mode = profile.network.mode ?? "";
  if (mode.startsWith("container:")) {
    throw new McpmgrError("INVALID_OPTION", `network mode ${mode} in the permission profile is not supported`, {
      hint: "use bridge, host, none or a network's name",
    });
  }
  if (values["permission-profile"] !== undefined || plan.entry === undefined) return;
  // A named network would put the server beside other containers (databases, other servers).
  const joinsNetwork = !["", "none", "bridge"].includes(mode) && values.network !== mode;
  const wants = profile.privileged
    ? "privileged mode"
    : mode === "host"
      ? "the host's network"
      : joinsNetwork
        ? `the network ${mode}`
        : undefined;
  if (wants) {
    throw new McpmgrError("CONFLICTING_OPTIONS", `registry entry ${plan.entry.name} asks for ${wants}`, {
      hint: "review it ('mcpmgr registry info NAME') and pass the profile yourself with --permission-profile FILE (a network with --network) to accept",
    });
  }
}

export async function launchContainer(
  plan: RunPlan,
  parsed: ParsedRunArgv,
  engine: ContainerEngine,
  image: string,
  proxyPort: number,
  printOverlays: boolean,
): Promise<LaunchedContainer> {
  const { values } = parsed;
  const settings = await containerSettings(plan, parsed);
  const { transport, profile, mounts, hiddenDirs, isolate, networkMode } = settings;
  if (printOverlays) printContainerGrants(plan, values, settings, engine);
  const stdio = transport === "stdio";
  const limits = containerResourceLimits(defaultLimits);
  // Leftovers of a run that was killed hard (same names) would block this one.
  await removeWorkloadObjects(engine, plan.name);
  const environment = await serverEnvironment(plan, values);
  const redact = redactor(environment.secretValues);
  // Printed by the terminal-side run (preflight or --foreground), not again by the supervisor.
  const { overlays, emptyFile } = await overlaysFor(mounts, {
    ...values,
    "print-resolved-overlays": values["print-resolved-overlays"] && printOverlays,
  });
  const none = deniesNetwork(profile);
  if (!isolate && restrictsOutbound(profile) && !none) {
    log.warn(
      "the permission profile limits outbound hosts/ports, which only --isolate-network enforces; without it the container reaches any host",
    );
  }
  const hostNetwork = networkMode === "host";

  let containerPort: number | undefined;
  let hostPort: number | undefined;
  if (!stdio) {
    const given = values["target-port"] ?? plan.entry?.targetPort;
    // On the host's network the server's port is a host port: an image's EXPOSE (often 8080)
    // would clash between workloads, so with nothing chosen it gets a free one (MCP_PORT)...
    const exposed =
      given === undefined && !hostNetwork ? ((await inspectLocalImage(engine, image))?.exposedPorts ?? []) : [];
    containerPort = serverPortFor(given, exposed) ?? (hostNetwork ? await findFreePort() : DEFAULT_SERVER_PORT);
    hostPort = hostNetwork ? containerPort : await findFreePort();
    // ...and a chosen one must be free, or the proxy would forward to whatever holds it.
    if (hostNetwork && given !== undefined && portInUse(containerPort)) {
      throw new McpmgrError(
        "PORT_IN_USE",
        `port ${containerPort} is already in use on this host, and with --network host the server would listen there`,
        {
          hint: "stop what listens on it, or pick another port with --target-port",
        },
      );
    }
  }
  const labels = (role: "server" | "egress" | "network") =>
    workloadLabels({ workload: plan.name, group: values.group, transport, port: proxyPort, role, user: values.label });

  if (!stdio && !isolate && printOverlays)
    log.warn(
      `${plan.name}'s MCP port is reachable on ${hostNetwork ? "the host's network" : `network ${networkMode}`}${values.publish.length > 0 ? " and the published ports" : ""} without going through the proxy (its authentication, policies and audit)`,
    );
  // The isolated server's relay: a Unix socket in a host directory only mcpmgr's user opens.
  const socketDir = isolate && !stdio ? ingressSocketDir(engine, plan.name, resolvePaths().runtimeDir) : undefined;
  const isolation = isolate
    ? await createIsolation(engine, {
        workload: plan.name,
        labels,
        profile,
        allowGateway: values["allow-docker-gateway"],
        ...(containerPort !== undefined
          ? { ingress: socketDir ? { containerPort, socketDir } : { containerPort, ...(hostPort ? { hostPort } : {}) } }
          : {}),
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
    // A mount that shows nothing but mcpmgr's state is replaced by the empty tmpfs (one mount point each).
    volumes: mounts.filter((m) => !hiddenDirs.includes(m.containerPath)),
    overlays: [...overlays, ...hiddenDirs.map((containerPath) => ({ kind: "dir" as const, containerPath }))],
    ...(emptyFile ? { emptyFile } : {}),
    networkMode: isolation?.networkName ?? networkMode,
    networkAlias: SERVER_ALIAS,
    publish: [
      ...(!isolate && !hostNetwork && containerPort !== undefined && hostPort !== undefined
        ? [{ containerPort, hostPort }]
        : []),
      ...values.publish.map((p) => ({ containerPort: p.containerPort, hostPort: p.hostPort })),
    ],
    limits,
  });
  const server = await startServerContainer(engine, options, stdio, async () => {
    await isolation?.remove();
  });
  if (socketDir && containerPort !== undefined)
    return {
      server,
      redact,
      target: { host: "127.0.0.1", port: containerPort, unix: join(socketDir, INGRESS_SOCKET) },
    };
  return { server, redact, ...(hostPort !== undefined ? { target: { host: "127.0.0.1", port: hostPort } } : {}) };
}
