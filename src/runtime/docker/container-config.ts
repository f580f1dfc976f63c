/**
 * The engine's create options for an MCP server container: hardening that does not depend
 * on the user (all capabilities dropped, no-new-privileges, memory and pid limits), the
 * permission profile turned into mounts and a network mode, ignore-pattern overlays, and
 * the ports an HTTP server is reached on (published on loopback only). Pure, so the
 * policy is unit tested without an engine.
 */
import { homedir } from "node:os";
import { isAbsolute, posix } from "node:path";
import type Docker from "dockerode";
import { McpmgrError } from "../../errors.ts";
import { deniesNetwork, type PermissionProfile } from "../permission-profile.ts";
import { expandHostPath, hiddenTargets, mcpmgrProtectedDirs, realHostPath } from "../host-paths.ts";
import { assertNoPlantedLinks } from "../planted-links.ts";
import { profileMount } from "../sandbox.ts";

export interface VolumeSpec {
  readonly hostPath: string;
  readonly containerPath: string;
  readonly readOnly: boolean;
}

/** dir: empty tmpfs; file: the empty file bound over it; protect: the host file itself, read-only. */
export interface OverlaySpec {
  readonly kind: "dir" | "file" | "protect";
  readonly containerPath: string;
  readonly hostPath?: string;
}

export interface ResourceLimits {
  readonly memoryBytes: number;
  readonly pids: number;
}

/** Defaults sized for an MCP server (a Node or Python process and its children), not a database. */
export const defaultLimits: ResourceLimits = { memoryBytes: 2 * 1024 ** 3, pids: 512 };

export interface ServerContainerInput {
  readonly containerName: string;
  readonly image: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly labels: Readonly<Record<string, string>>;
  readonly stdio: boolean;
  readonly profile: PermissionProfile;
  readonly volumes: readonly VolumeSpec[];
  readonly overlays: readonly OverlaySpec[];
  /** Host file bound read-only over hidden files. */
  readonly emptyFile?: string;
  /** bridge, host, none, or a network's name. */
  readonly networkMode: string;
  /** Container port → host port, bound on 127.0.0.1. */
  readonly publish: readonly { readonly containerPort: number; readonly hostPort: number }[];
  readonly limits: ResourceLimits;
  /** Name other containers on the network reach it by (isolated networks). */
  readonly networkAlias?: string;
  /** `seccomp=…`: the engine's default profile refusing set-ID modes (setid-seccomp.ts); absent: the engine's default. */
  readonly seccomp?: string;
  /**
   * The set-ID guard (setid-guard.ts), when the engine's profile could not be extended: the command
   * starting with it (which replaces `args`); the guard is copied in before the start.
   */
  readonly guard?: {
    readonly command: { readonly Entrypoint: readonly string[]; readonly Cmd: readonly string[] };
  };
}

/** The mounts a workload gets: the profile's read/write lists, then -v volumes (later wins on the same target). */
export function resolveMounts(
  profile: PermissionProfile,
  volumes: readonly VolumeSpec[],
  home = homedir(),
  cwd = process.cwd(),
): VolumeSpec[] {
  const all = [
    ...profile.read
      .map((spec) => profileMount(spec, true))
      .map((m) => ({ hostPath: m.hostPath, containerPath: m.targetPath, readOnly: true })),
    ...profile.write
      .map((spec) => profileMount(spec, false))
      .map((m) => ({ hostPath: m.hostPath, containerPath: m.targetPath, readOnly: false })),
    ...volumes,
  ];
  const given = all.map((mount) => ({ ...mount, hostPath: expandHostPath(mount.hostPath, home, cwd) }));
  // Before anything is resolved: a link the server planted in a writable mount is not followed.
  assertNoPlantedLinks(given);
  const byTarget = new Map<string, VolumeSpec>();
  for (const mount of given) {
    // The real path: what is hidden, refused or shown is decided on what the engine will mount.
    const hostPath = realHostPath(mount.hostPath);
    const target = mount.containerPath.replace(/^~(?=\/|$)/, "/home/mcp");
    if (!isAbsolute(target) && !posix.isAbsolute(target)) {
      throw new McpmgrError(
        "INVALID_OPTION",
        `mount target ${JSON.stringify(mount.containerPath)} is not an absolute container path`,
        { hint: "write it as host-path:/container/path" },
      );
    }
    // "/work/" and "/work" are one mount point to the engine (it refuses duplicates).
    const containerPath = posix.normalize(target).replace(/(.)\/+$/, "$1");
    byTarget.set(containerPath, { hostPath, containerPath, readOnly: mount.readOnly });
  }
  return [...byTarget.values()];
}

/**
 * Container paths where the mounts would show mcpmgr's own directories (secrets, other
 * workloads' records and logs): each gets an empty tmpfs, as in the process sandbox.
 */
export function mcpmgrDirsUnder(mounts: readonly VolumeSpec[], protectedDirs = mcpmgrProtectedDirs()): string[] {
  return hiddenTargets(
    mounts.map((m) => ({ hostPath: m.hostPath, targetPath: m.containerPath })),
    protectedDirs,
  );
}

/**
 * The port an sse/streamable-http server listens on in its container: --target-port or the
 * registry entry's port when given; else the image's EXPOSEd TCP port when it declares
 * exactly one (the port its author chose); else undefined, for the caller's default.
 */
export function serverPortFor(given: number | undefined, exposedTcpPorts: readonly number[]): number | undefined {
  if (given !== undefined) return given;
  return exposedTcpPorts.length === 1 ? exposedTcpPorts[0] : undefined;
}

/** Network mode from the profile and --network: profile none wins and conflicts with an explicit network. */
export function networkModeFor(profile: PermissionProfile, network: string | undefined): string {
  const profileMode = profile.network.mode;
  // The built-in `none` and any profile without outbound rules mean no network at all.
  const wantsNone = deniesNetwork(profile);
  if (wantsNone && network !== undefined && network !== "none") {
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      `--network ${network} conflicts with the permission profile, which allows no network`,
      {
        hint: "leave --network out, or use a profile that allows network access",
      },
    );
  }
  if (wantsNone) return "none";
  return network ?? (profileMode && profileMode !== "" ? profileMode : "bridge");
}

export function serverContainerOptions(input: ServerContainerInput): Docker.ContainerCreateOptions & { name: string } {
  const mounts: Docker.MountSettings[] = input.volumes.map((v) => ({
    Type: "bind",
    Source: v.hostPath,
    Target: v.containerPath,
    ReadOnly: v.readOnly,
  }));
  for (const overlay of input.overlays) {
    if (overlay.kind === "dir")
      mounts.push({
        Type: "tmpfs",
        Source: "",
        Target: overlay.containerPath,
        TmpfsOptions: { SizeBytes: 1024 * 1024, Mode: 0o555 },
      });
    else if (overlay.kind === "protect" && overlay.hostPath)
      mounts.push({ Type: "bind", Source: overlay.hostPath, Target: overlay.containerPath, ReadOnly: true });
    else if (overlay.kind === "file" && input.emptyFile)
      mounts.push({ Type: "bind", Source: input.emptyFile, Target: overlay.containerPath, ReadOnly: true });
  }
  const exposed: Record<string, object> = {};
  const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
  for (const { containerPort, hostPort } of input.publish) {
    exposed[`${containerPort}/tcp`] = {};
    (bindings[`${containerPort}/tcp`] ??= []).push({ HostIp: "127.0.0.1", HostPort: String(hostPort) });
  }
  const custom = !["bridge", "host", "none"].includes(input.networkMode) && !input.networkMode.startsWith("container:");
  return {
    name: input.containerName,
    Image: input.image,
    ...(input.guard
      ? { Entrypoint: [...input.guard.command.Entrypoint], Cmd: [...input.guard.command.Cmd] }
      : input.args.length > 0
        ? { Cmd: [...input.args] }
        : {}),
    Env: Object.entries(input.env).map(([key, value]) => `${key}=${value}`),
    Labels: { ...input.labels },
    ExposedPorts: exposed,
    // stdio servers read stdin for their whole life: keep it open across attaches.
    OpenStdin: input.stdio,
    StdinOnce: false,
    AttachStdin: input.stdio,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    HostConfig: {
      CapDrop: ["ALL"],
      // A privileged container is the user's explicit choice of everything: its seccomp stays the engine's.
      SecurityOpt: ["no-new-privileges", ...(input.seccomp && !input.profile.privileged ? [input.seccomp] : [])],
      Privileged: input.profile.privileged,
      Memory: input.limits.memoryBytes,
      MemorySwap: input.limits.memoryBytes,
      PidsLimit: input.limits.pids,
      Mounts: mounts,
      NetworkMode: input.networkMode,
      PortBindings: bindings,
      // A tiny init as PID 1: servers that never installed a SIGTERM handler still stop on
      // `docker stop` (PID 1 ignores default-action signals), and zombies are reaped.
      Init: true,
      // Restarts are the supervisor's job: it sees the exit and recreates the container.
      RestartPolicy: { Name: "no" },
    },
    ...(custom && input.networkAlias
      ? { NetworkingConfig: { EndpointsConfig: { [input.networkMode]: { Aliases: [input.networkAlias] } } } }
      : {}),
  };
}
