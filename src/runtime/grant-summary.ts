/**
 * What a workload is granted, in the words `run` prints before it starts the server (in the
 * user's terminal, for detached runs too): every host path with its access and where the
 * grant came from, the network, the devices, and anything privileged.
 */
import { describePermissions } from "../config/permission-profile.ts";
import { expandHostPath, isWithin, realHostPath } from "./host-paths.ts";
import type { WorkingDirView } from "./mount-policy.ts";
import { allowsNetwork, deniesNetwork, type PermissionProfile } from "./permission-profile.ts";
import { profileMount, toolchainDirs } from "./sandbox.ts";

export interface Grant {
  readonly write: boolean;
  readonly hostPath: string;
  readonly targetPath: string;
  /** "-v", "registry entry NAME", "--permission-profile", "working directory", "package", "toolchain". */
  readonly origin: string;
}

interface GrantSummary {
  readonly workload: string;
  readonly runtime: string;
  readonly grants: readonly Grant[];
  readonly network: string;
  readonly devices: string;
  readonly notes?: readonly string[];
}

/** The profile's read/write paths as grants, labelled with where the profile came from. */
function profileGrants(profile: PermissionProfile, origin: string, home: string): Grant[] {
  return [
    ...profile.read.map((spec) => profileMount(spec, true)),
    ...profile.write.map((spec) => profileMount(spec, false)),
  ].map((m) => ({
    write: !m.readOnly,
    hostPath: realHostPath(expandHostPath(m.hostPath, home)),
    targetPath: m.targetPath.replace(/^~(?=\/|$)/, home),
    origin,
  }));
}

function volumeGrants(
  volumes: readonly { hostPath: string; containerPath: string; readOnly: boolean }[],
  home: string,
): Grant[] {
  return volumes.map((v) => ({
    write: !v.readOnly,
    hostPath: realHostPath(expandHostPath(v.hostPath, home)),
    targetPath: v.containerPath,
    origin: "-v",
  }));
}

/** The network line for the process sandbox. */
function processNetwork(profile: PermissionProfile): string {
  return allowsNetwork(profile)
    ? "the host's network (any outbound connection, the host's loopback services included)"
    : "none (an empty network namespace of its own)";
}

/** The network line for a container. */
export function containerNetwork(profile: PermissionProfile, networkMode: string, isolated: boolean): string {
  if (isolated) {
    if (deniesNetwork(profile)) return "none (an internal network; mcpmgr's proxy is the only way in)";
    return `only through mcpmgr's egress proxy, ${describePermissions({ ...profile, read: [], write: [] }).split(";")[0]}`;
  }
  if (networkMode === "none") return "none";
  if (networkMode === "host") return "the host's network (every host port and service)";
  const out = profile.network.outbound;
  // Only a profile that lists hosts or ports has an allow-list to leave unenforced.
  const listed = !out.insecure_allow_all && (out.allow_host.length > 0 || out.allow_port.length > 0);
  return listed
    ? `${networkMode} network, any outbound connection: the profile's allow-list is not enforced without --isolate-network`
    : `${networkMode} network, any outbound connection`;
}

const processDevices = "/dev/null, zero, full, random, urandom, tty and a private pts (no host device)";
const containerDevices = "the engine's defaults (null, zero, full, random, urandom, tty); no host device";

/** The system view of the process sandbox, as one line (docs/security.md lists it). */
function processSystemView(toolchainDirs: readonly string[]): string {
  const toolchain = toolchainDirs.length > 0 ? `, ${toolchainDirs.join(", ")} (toolchain)` : "";
  return `read   /usr, /bin, /sbin, /lib*, the /etc allow-list (system view)${toolchain}`;
}

function formatGrants(summary: GrantSummary): string {
  const lines = [`${summary.workload} gets (${summary.runtime}):`];
  for (const note of summary.notes ?? []) lines.push(`  ${note}`);
  for (const grant of summary.grants) {
    const where = grant.targetPath === grant.hostPath ? grant.hostPath : `${grant.hostPath} -> ${grant.targetPath}`;
    lines.push(`  ${grant.write ? "write" : "read "}  ${where}  (${grant.origin})`);
  }
  if (summary.grants.length === 0) lines.push("  no host paths");
  lines.push(`  network: ${summary.network}`);
  lines.push(`  devices: ${summary.devices}`);
  return lines.join("\n");
}

/** What a sandboxed process gets (docs/security.md W1, W6). */
export function processGrantSummary(input: {
  readonly workload: string;
  readonly profile: PermissionProfile;
  /** Where the profile came from ("registry entry NAME", "--permission-profile FILE", ...). */
  readonly origin: string;
  readonly volumes: readonly { hostPath: string; containerPath: string; readOnly: boolean }[];
  readonly command: readonly string[];
  /** Whether the working directory is shown (mount-policy.ts `workingDirView`): the view the launch gets. */
  readonly workingDir: WorkingDirView;
  readonly localPackage?: string;
  readonly home: string;
}): string {
  const { home, workingDir } = input;
  const cwd = workingDir.path;
  // A local Go module is its own working directory: shown as the package.
  const shownAsPackage = input.localPackage !== undefined && isWithin(cwd, input.localPackage);
  return formatGrants({
    workload: input.workload,
    runtime: "process sandbox: uid 65534 in a user namespace, no capabilities, seccomp filter",
    notes: [
      processSystemView(toolchainDirs(input.command, home)),
      ...(!workingDir.shown && !shownAsPackage
        ? [
            `not shown: the working directory ${cwd}, because ${workingDir.reason}; the server starts in its empty home (to show it anyway, add -v "$PWD:$PWD:ro"; or give the server only what it needs with -v)`,
          ]
        : []),
      ...(workingDir.shown
        ? workingDir.sockets.map(
            (socket) => `covered: the socket ${socket} in the working directory (the server sees an empty file there)`,
          )
        : []),
    ],
    grants: [
      ...(workingDir.shown ? [{ write: false, hostPath: cwd, targetPath: cwd, origin: "working directory" }] : []),
      ...(input.localPackage
        ? [{ write: false, hostPath: input.localPackage, targetPath: input.localPackage, origin: "package" }]
        : []),
      ...profileGrants(input.profile, input.origin, home),
      ...volumeGrants(input.volumes, home),
    ],
    network: processNetwork(input.profile),
    devices: processDevices,
  });
}

/** What a container gets (docs/security.md W5, W6, W7). */
export function containerGrantSummary(input: {
  readonly workload: string;
  readonly engine: string;
  readonly profile: PermissionProfile;
  readonly origin: string;
  readonly volumes: readonly { hostPath: string; containerPath: string; readOnly: boolean }[];
  readonly publish: readonly { hostPort: number; containerPort: number }[];
  /** An HTTP server reached only through the relay. */
  readonly privateHttp: boolean;
  readonly isolated: boolean;
  readonly networkMode: string;
  readonly home: string;
}): string {
  const privileged = input.profile.privileged;
  return formatGrants({
    workload: input.workload,
    runtime: `${input.engine} container: capabilities dropped, no-new-privileges, the image's own filesystem`,
    notes: [
      ...(privileged ? ["PRIVILEGED: every capability and every host device"] : []),
      ...input.publish.map((p) => `port   127.0.0.1:${p.hostPort} -> ${p.containerPort} (-p)`),
      ...(input.privateHttp ? ["its MCP port is reached only by mcpmgr's proxy (internal network and relay)"] : []),
    ],
    grants: [...profileGrants(input.profile, input.origin, input.home), ...volumeGrants(input.volumes, input.home)],
    network: containerNetwork(input.profile, input.networkMode, input.isolated),
    devices: privileged ? "every host device (privileged)" : containerDevices,
  });
}
