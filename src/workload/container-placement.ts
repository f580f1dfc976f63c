/**
 * The rules of a container placement: what the container may be given (a registry entry
 * cannot grant itself privileged mode, the host's or another named network), its network
 * (an HTTP server isolated automatically on Docker unless the user chose its network;
 * `--isolate-network`; what `--network`, `--publish` and profile `none` exclude), its mounts
 * (real paths, mcpmgr's directories hidden), the build options and resource limits.
 */
import type { ParsedRunArgv } from "../config/run-argv.ts";
import { McpmgrError } from "../errors.ts";
import type { RegistryEntry } from "../registry/entry.ts";
import { defaultLimits, mcpmgrDirsUnder, networkModeFor, resolveMounts } from "../runtime/docker/container-config.ts";
import type { ContainerEngine } from "../runtime/docker/engine.ts";
import { readCaCert, validateAddPackages } from "../runtime/docker/image-build.ts";
import { validateUserLabels } from "../runtime/docker/labels.ts";
import { mcpmgrProtectedDirs } from "../runtime/host-paths.ts";
import { deniesNetwork, restrictsOutbound, type PermissionProfile } from "../runtime/permission-profile.ts";
import type { WorkloadContext } from "./context.ts";
import { containerResourceLimits } from "./limits.ts";
import { localServer, profileOf, serverTransport } from "./local-server.ts";
import type { ContainerPlacement, ImageSource, InertOptionWarning, PackageSource, Values } from "./placement.ts";

/** Options for building an image from a package, meaningless for an image. */
const buildOptions = ["runtime-image", "runtime-add-package", "ca-cert"] as const;

export function containerPlacement(
  parsed: ParsedRunArgv,
  source: PackageSource | ImageSource,
  entry: RegistryEntry | undefined,
  engine: ContainerEngine,
  ctx: WorkloadContext,
  inert?: InertOptionWarning,
): ContainerPlacement {
  const { values, given } = parsed;
  const transport = serverTransport(parsed, entry);
  const stdio = transport === "stdio";
  if (given.has("target-host")) {
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      "--target-host applies to servers run as local processes; a container's port is published on 127.0.0.1",
      { hint: "leave --target-host out" },
    );
  }
  if (stdio && given.has("target-port")) {
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
  const profile = profileOf(values, entry, ctx);
  assertProfileAccepted(profile, values, entry);
  // An HTTP server is reached only through mcpmgr's proxy: it gets an internal network of its
  // own (reached through the helper's relay) unless the user chose its network or published
  // ports. Docker only: Podman's internal networks keep an address on the host's side, so they
  // would not keep host processes out; there the port stays published on loopback, with a warning.
  const httpIsolated =
    !stdio && (deniesNetwork(profile) || (!choosesNetwork(profile, values) && engine.kind === "docker"));
  const isolate = values["isolate-network"] || httpIsolated;
  if (isolate && values.network !== undefined) {
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      `--network ${values.network} conflicts with network isolation, which puts the server on its own internal network`,
      { hint: "leave --network out, or --isolate-network" },
    );
  }
  const networkMode = isolate ? "" : networkModeFor(profile, values.network);
  if (!stdio && (networkMode === "none" || networkMode.startsWith("container:"))) {
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      `--transport ${transport} needs a network the proxy can reach, not --network ${networkMode}`,
      { hint: "use profile none (mcpmgr then isolates the server and relays to it), or another network" },
    );
  }
  if (values.publish.length > 0 && (networkMode === "host" || isolate || networkMode === "none")) {
    throw new McpmgrError("CONFLICTING_OPTIONS", "--publish needs a bridge or named network", {
      hint: "leave --publish out with --network host, profile none or --isolate-network",
    });
  }
  const mounts = resolveMounts(profile, values.volume);
  if (source.kind === "image") {
    for (const option of buildOptions) {
      const isGiven = option === "runtime-add-package" ? values[option].length > 0 : values[option] !== undefined;
      if (isGiven)
        throw new McpmgrError(
          "CONFLICTING_OPTIONS",
          `--${option} applies to npx://, uvx:// and go:// builds, not to an image`,
          { hint: `leave --${option} out` },
        );
    }
  }
  validateAddPackages(values["runtime-add-package"]);
  if (values["ca-cert"] !== undefined) readCaCert(values["ca-cert"]);
  const limits = containerResourceLimits(defaultLimits, ctx.env);
  const server = localServer(parsed, entry, profile, values["target-port"] ?? entry?.targetPort, inert);
  if (!isolate && restrictsOutbound(profile)) {
    ctx.log.warn(
      "the permission profile limits outbound hosts/ports, which only --isolate-network enforces; without it the container reaches any host",
    );
  }
  return {
    kind: "container",
    source,
    engine,
    server,
    mounts,
    hiddenDirs: mcpmgrDirsUnder(mounts, mcpmgrProtectedDirs(ctx.env)),
    isolate,
    allowGateway: values["allow-docker-gateway"],
    networkMode,
    publish: values.publish,
    targetPort: values["target-port"] ?? entry?.targetPort,
    verification: values["image-verification"],
    build: {
      ...(values["runtime-image"] ? { runtimeImage: values["runtime-image"] } : {}),
      addPackages: values["runtime-add-package"],
      ...(values["ca-cert"] ? { caCertPath: values["ca-cert"] } : {}),
    },
    limits,
  };
}

/** The user (or the profile) picked the container's network or published its ports: no automatic isolation. */
function choosesNetwork(profile: PermissionProfile, values: Values): boolean {
  const mode = profile.network.mode ?? "";
  return values.network !== undefined || values.publish.length > 0 || (mode !== "" && mode !== "none");
}

/**
 * A registry entry (possibly from a custom registry file or URL) cannot grant itself more
 * than a container: privileged mode, the host's network or another named network need the
 * user's own profile (or --network).
 */
function assertProfileAccepted(profile: PermissionProfile, values: Values, entry: RegistryEntry | undefined): void {
  const mode = profile.network.mode ?? "";
  if (mode.startsWith("container:")) {
    throw new McpmgrError("INVALID_OPTION", `network mode ${mode} in the permission profile is not supported`, {
      hint: "use bridge, host, none or a network's name",
    });
  }
  if (values["permission-profile"] !== undefined || entry === undefined) return;
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
    throw new McpmgrError("CONFLICTING_OPTIONS", `registry entry ${entry.name} asks for ${wants}`, {
      hint: "review it ('mcpmgr registry info NAME') and pass the profile yourself with --permission-profile FILE (a network with --network) to accept",
    });
  }
}
