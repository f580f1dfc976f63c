/**
 * What a mount the user did not spell out may show. Registry data is third-party input (a
 * custom registry file or URL): its `read`/`write` paths are refused when they would hand the
 * server the host (sockets anywhere below them, the root, system directories, shared scratch
 * trees and what lies in them, the home directory whole or its credential stores, mcpmgr's
 * own state), unless the user grants each such path on the command line with
 * --allow-registry-mount PATH. The working directory of a sandboxed process is shown unless
 * the same rules about where it lies refuse it; the sockets in it are covered, not shown.
 * Every decision is made on real paths, so a symlink cannot dress one path up as another.
 */
import { lstatSync, realpathSync, statSync } from "node:fs";
import { join } from "node:path";
import { McpmgrError } from "../errors.ts";
import { shellWord } from "../printable.ts";
import { expandHostPath, isWithin, realHostPath } from "./host-paths.ts";
import type { PermissionProfile } from "./permission-profile.ts";
import { profileMount } from "./sandbox.ts";
import { findSocket, socketScanReason, socketsBelow } from "./socket-scan.ts";

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

/** Shared scratch trees, refused with all they hold: other programs' sockets (tmux, ssh agents, X11) live there. */
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
  const where = locationReason(realPath, context);
  if (where) return where;
  const state = context.protectedDirs.find((dir) => isWithin(dir, realPath));
  if (state) return `it is or holds mcpmgr's own state (${state})`;
  return anySocketBelow(realPath, context);
}

/**
 * Whether a sandboxed process is shown its working directory (read-only, at its own path),
 * decided once per start and given to both the grant summary and the launch.
 */
export type WorkingDirView =
  | {
      readonly shown: true;
      readonly path: string;
      readonly realPath: string;
      /** Sockets in it (real paths), each covered by an empty file in the sandbox. */
      readonly sockets: readonly string[];
    }
  | { readonly shown: false; readonly path: string; readonly reason: string };

/**
 * The working directory's view: hidden when it lies where a registry mount is refused (the
 * root, system and scratch trees, the home directory whole, credentials, inside mcpmgr's
 * state), otherwise shown with its sockets covered. A directory holding mcpmgr's state is
 * shown with that state hidden (W3). Its size and unreadable corners do not matter: the
 * sockets come from the kernel's list (socket-scan.ts).
 */
export function workingDirView(cwd: string, context: HostContext): WorkingDirView {
  const realPath = realHostPath(cwd, "working directory", "start mcpmgr in a directory that exists");
  const reason = locationReason(realPath, context);
  if (reason !== undefined) return { shown: false, path: cwd, reason };
  return { shown: true, path: cwd, realPath, sockets: socketsBelow(realPath, { skip: context.protectedDirs }) };
}

/** The rules that need only the path: the root, system and scratch trees, mcpmgr's state, the home directory, credentials. */
function locationReason(realPath: string, context: HostContext): string | undefined {
  if (realPath === "/") return "it is the host's root directory";
  const overlaps = (tree: string) => isWithin(realPath, tree) || isWithin(tree, realPath);
  const home = real(context.home);
  // /root is root's home: for root, what lies in it gets the home directory's rules below.
  const system = systemTrees.map(real).find((tree) => tree !== undefined && tree !== home && overlaps(tree));
  if (system) return `it is or holds the system directory ${system}`;
  const state = context.protectedDirs.find((dir) => isWithin(realPath, dir));
  if (state) return `it is or lies in mcpmgr's own state (${state})`;
  const scratch = sharedScratch.map(real).find((tree) => tree !== undefined && isWithin(realPath, tree));
  if (scratch) {
    return realPath === scratch
      ? `${scratch} is shared by every program (tmux, agent and display sockets)`
      : `it lies in ${scratch}, which every program shares (tmux, agent and display sockets live there)`;
  }
  if (home && isWithin(home, realPath)) return "it is or holds the home directory";
  const credentials = home
    ? homeCredentials.map((rel) => real(join(home, rel))).find((path) => path !== undefined && overlaps(path))
    : undefined;
  if (credentials) return `it is or holds the credential store ${credentials}`;
  return undefined;
}

/** A socket anywhere below a directory (mcpmgr's own directories, hidden anyway, not walked). */
function anySocketBelow(realPath: string, context: HostContext): string | undefined {
  if (!statSync(realPath, { throwIfNoEntry: false })?.isDirectory()) return undefined;
  return socketScanReason(findSocket(realPath, { skip: context.protectedDirs }));
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
        hint: `review the entry ('mcpmgr registry info ${entryName}'); to grant it anyway, add --allow-registry-mount ${shellWord(hostPath)}`,
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
