/**
 * What a registry entry's permission profile may mount. Registry data is third-party
 * input (a custom registry file or URL): its `read`/`write` paths are refused when they
 * would hand the server the host (engine sockets, the root, system directories, the home
 * directory whole or its credential stores, mcpmgr's own state), unless the user grants
 * each such path on the command line with --allow-registry-mount PATH. Every decision is
 * made on real paths, so a symlink cannot dress one path up as another.
 */
import { lstatSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { McpmgrError } from "../errors.ts";
import { expandHostPath, isWithin, realHostPath } from "./host-paths.ts";
import type { PermissionProfile } from "./permission-profile.ts";
import { profileMount } from "./sandbox.ts";

/** Trees of the operating system: mounting one (or a directory holding one) is mounting the host. */
const systemTrees = [
  "/etc",
  "/proc",
  "/sys",
  "/dev",
  "/boot",
  "/run",
  "/var",
  "/root",
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/snap",
];

/** Shared scratch trees, refused whole: they hold other programs' sockets (ssh agents, X11). */
const sharedScratch = ["/tmp", "/var/tmp", "/dev/shm"];

/** Credential stores under the home directory. */
const homeCredentials = [
  ".ssh",
  ".gnupg",
  ".aws",
  ".azure",
  ".kube",
  ".docker",
  ".config/gcloud",
  ".config/gh",
  ".config/containers",
  ".local/share/keyrings",
  ".password-store",
  ".netrc",
  ".npmrc",
  ".pypirc",
  ".git-credentials",
];

export interface HostContext {
  readonly home: string;
  /** mcpmgr's directories as real paths (host-paths.ts mcpmgrProtectedDirs). */
  readonly protectedDirs: readonly string[];
}

/** Why mounting `realPath` hands the server more than a directory of data; undefined when it does not. */
export function sensitiveReason(realPath: string, context: HostContext): string | undefined {
  if (lstatSync(realPath, { throwIfNoEntry: false })?.isSocket())
    return "it is a socket (a container engine's API or an agent answers there)";
  if (realPath === "/") return "it is the host's root directory";
  const overlaps = (tree: string) => isWithin(realPath, tree) || isWithin(tree, realPath);
  const system = systemTrees.map(real).find((tree) => tree !== undefined && overlaps(tree));
  if (system) return `it is or holds the system directory ${system}`;
  if (sharedScratch.includes(realPath)) return `${realPath} is shared by every program (agent and display sockets)`;
  const state = context.protectedDirs.find(overlaps);
  if (state) return `it is or holds mcpmgr's own state (${state})`;
  const home = real(context.home);
  if (home && isWithin(home, realPath)) return "it is or holds the home directory";
  const credentials = home
    ? homeCredentials.map((rel) => real(join(home, rel))).find((path) => path !== undefined && overlaps(path))
    : undefined;
  if (credentials) return `it is or holds the credential store ${credentials}`;
  return undefined;
}

/**
 * Refuses the registry entry's mounts that `sensitiveReason` names, unless `granted` (the
 * --allow-registry-mount paths) holds the same real path.
 */
export function assertRegistryMounts(
  entryName: string,
  profile: PermissionProfile,
  granted: readonly string[],
  context: HostContext,
  cwd = process.cwd(),
): void {
  const grantedReal = new Set(granted.map((path) => real(expandHostPath(path, context.home, cwd)) ?? path));
  for (const [spec, readOnly] of [
    ...profile.read.map((s) => [s, true] as const),
    ...profile.write.map((s) => [s, false] as const),
  ]) {
    const mount = profileMount(spec, readOnly);
    const hostPath = realHostPath(expandHostPath(mount.hostPath, context.home, cwd), "registry mount");
    const why = sensitiveReason(hostPath, context);
    if (why === undefined || grantedReal.has(hostPath)) continue;
    throw new McpmgrError(
      "REGISTRY_PERMISSION_REFUSED",
      `registry entry ${entryName} asks to ${readOnly ? "read" : "write"} ${hostPath}${hostPath !== mount.hostPath ? ` (${mount.hostPath})` : ""}, refused: ${why}`,
      {
        hint: `review the entry ('mcpmgr registry info ${entryName}'); to grant it anyway, add --allow-registry-mount ${hostPath}`,
      },
    );
  }
}

function real(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}
