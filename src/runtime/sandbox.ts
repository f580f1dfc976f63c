/**
 * The Linux sandbox of the process runtime: bubblewrap enforcing a permission
 * profile. The host is visible read-only; the user's home, /tmp and /run (where the
 * session bus, agent and engine sockets live) are replaced by empty tmpfs; the working
 * directory stays visible read-only (servers read project files and npx resolves local
 * packages there) unless it would reveal the home directory; mcpmgr's own state is
 * hidden; only the profile's `write` paths and read-write volumes are writable; profile
 * `none` gets its own empty network namespace; every capability is dropped.
 */
import { existsSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { resolve } from "node:path";
import { McpmgrError } from "../errors.ts";
import { allowsNetwork, type PermissionProfile } from "./permission-profile.ts";

export interface Mount {
  readonly hostPath: string;
  readonly targetPath: string;
  readonly readOnly: boolean;
}

export interface SandboxPlan {
  readonly profile: PermissionProfile;
  readonly volumes: readonly Mount[];
  /** Directories the launcher itself needs writable (package caches). */
  readonly extraWritable?: readonly string[];
  /** The directory the server starts in; visible read-only. */
  readonly workingDir?: string;
  readonly home?: string;
  /** Directories never to show the server (mcpmgr's config, state and secrets). */
  readonly hidden?: readonly string[];
  /** Ignore-pattern overlays: empty tmpfs over directories, `emptyFile` over files, `protect` re-binds a host file read-only. */
  readonly overlays?: readonly {
    readonly kind: "dir" | "file" | "protect";
    readonly containerPath: string;
    readonly hostPath?: string;
  }[];
  readonly emptyFile?: string;
}

/** Where bwrap is, or undefined when the profile cannot be enforced here. */
export function findBwrap(): string | undefined {
  if (process.platform !== "linux") return undefined;
  return Bun.which("bwrap") ?? undefined;
}

export function unenforceableError(): McpmgrError {
  const why =
    process.platform === "linux" ? "bubblewrap (bwrap) is not installed" : `${process.platform} has no bubblewrap`;
  return new McpmgrError("SANDBOX_UNAVAILABLE", `cannot enforce the permission profile: ${why}`, {
    hint:
      process.platform === "linux"
        ? "install bubblewrap (apt-get install bubblewrap), start Docker or Podman, or pass --insecure-allow-unsandboxed to run the server without isolation"
        : "start Docker or Podman so the server runs in a container, or pass --insecure-allow-unsandboxed to run the server without isolation",
  });
}

export function bwrapArgs(plan: SandboxPlan): string[] {
  const home = plan.home ?? homedir();
  const args = [
    "--die-with-parent",
    "--new-session",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--cap-drop",
    "ALL",
  ];
  if (!allowsNetwork(plan.profile)) args.push("--unshare-net");
  args.push(
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
    "--tmpfs",
    home,
    "--tmpfs",
    "/run",
  );
  // DNS keeps working when /etc/resolv.conf points into the hidden /run.
  const resolvConf = realTarget("/etc/resolv.conf");
  if (resolvConf?.startsWith("/run/")) args.push("--ro-bind", resolvConf, resolvConf);
  // The working directory, unless showing it would show the whole home directory again.
  const showWorkingDir = plan.workingDir !== undefined && plan.workingDir !== "/" && !isWithin(home, plan.workingDir);
  const workingDir = showWorkingDir
    ? [{ hostPath: plan.workingDir as string, targetPath: plan.workingDir as string, readOnly: true }]
    : [];
  const mounts: Mount[] = [
    ...workingDir,
    ...plan.profile.read.map((spec) => profileMount(spec, true)),
    ...plan.profile.write.map((spec) => profileMount(spec, false)),
    ...(plan.extraWritable ?? []).map((path) => ({ hostPath: path, targetPath: path, readOnly: false })),
    ...plan.volumes,
  ];
  for (const mount of mounts) {
    const host = resolve(mount.hostPath.replace(/^~(?=\/|$)/, home));
    if (!existsSync(host)) {
      throw new McpmgrError("INVALID_OPTION", `mount source ${host} does not exist`, {
        hint: "create it, or fix the path in --volume or the permission profile",
      });
    }
    const target = resolve(mount.targetPath.replace(/^~(?=\/|$)/, home));
    assertMountPoint(target, home);
    args.push(mount.readOnly ? "--ro-bind" : "--bind", host, target);
  }
  for (const dir of plan.hidden ?? []) if (existsSync(dir)) args.push("--tmpfs", dir);
  for (const overlay of plan.overlays ?? []) {
    if (overlay.kind === "dir") args.push("--tmpfs", overlay.containerPath, "--remount-ro", overlay.containerPath);
    else if (overlay.kind === "protect" && overlay.hostPath)
      args.push("--ro-bind", overlay.hostPath, overlay.containerPath);
    else if (overlay.kind === "file" && plan.emptyFile) args.push("--ro-bind", plan.emptyFile, overlay.containerPath);
  }
  // A working directory kept hidden (it holds the home directory) starts the server in the empty home.
  if (plan.workingDir) args.push("--chdir", showWorkingDir || plan.workingDir === "/" ? plan.workingDir : home);
  return args;
}

/** Whether `inner` is `outer` or below it. */
function isWithin(inner: string, outer: string): boolean {
  const a = resolve(inner);
  const b = resolve(outer);
  return a === b || a.startsWith(b.endsWith("/") ? b : `${b}/`);
}

function realTarget(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * The sandbox's root is the host's, read-only: a mount point must already exist there,
 * or lie in one of the empty writable trees (/tmp, the home directory).
 */
function assertMountPoint(target: string, home: string): void {
  if (existsSync(target) || isWithin(target, "/tmp") || isWithin(target, home)) return;
  throw new McpmgrError(
    "INVALID_OPTION",
    `cannot mount at ${target}: the process runtime's sandbox uses the host's directory tree, where ${target} does not exist`,
    {
      hint: `mount at an existing path, or under /tmp or ${home} (e.g. -v ./data:/tmp/data)`,
    },
  );
}

/** Profile mounts are `host-path` or `host-path:target-path`. */
export function profileMount(spec: string, readOnly: boolean): Mount {
  const drive = /^[A-Za-z]:[\\/]/.test(spec) ? 2 : 0;
  const colon = spec.indexOf(":", drive);
  return colon === -1
    ? { hostPath: spec, targetPath: spec, readOnly }
    : { hostPath: spec.slice(0, colon), targetPath: spec.slice(colon + 1), readOnly };
}
