/**
 * The Linux sandbox of the process runtime: bubblewrap enforcing a permission
 * profile. The host is visible read-only, the user's home and /tmp are replaced by
 * empty tmpfs (the working directory stays visible read-only even there: servers read
 * project files and npx resolves locally installed packages from it), only the
 * profile's `write` paths and read-write volumes are writable, profile `none` gets its
 * own empty network namespace, and every capability is dropped.
 */
import { existsSync } from "node:fs";
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
}

/** Where bwrap is, or undefined when the profile cannot be enforced here. */
export function findBwrap(): string | undefined {
  if (process.platform !== "linux") return undefined;
  return Bun.which("bwrap") ?? undefined;
}

export function unenforceableError(): McpmgrError {
  const why = process.platform === "linux" ? "bubblewrap (bwrap) is not installed" : `${process.platform} has no bubblewrap`;
  return new McpmgrError("SANDBOX_UNAVAILABLE", `cannot enforce the permission profile: ${why}`, {
    hint:
      process.platform === "linux"
        ? "install bubblewrap (apt-get install bubblewrap), or pass --insecure-allow-unsandboxed to run the server without isolation"
        : "use a container runtime (not in this version), or pass --insecure-allow-unsandboxed to run the server without isolation",
  });
}

export function bwrapArgs(plan: SandboxPlan): string[] {
  const home = plan.home ?? homedir();
  const args = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL"];
  if (!allowsNetwork(plan.profile)) args.push("--unshare-net");
  args.push("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", home);
  const workingDir = plan.workingDir && plan.workingDir !== "/" ? [{ hostPath: plan.workingDir, targetPath: plan.workingDir, readOnly: true }] : [];
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
      throw new McpmgrError("INVALID_OPTION", `mount source ${host} does not exist`, { hint: "create it, or fix the path in --volume or the permission profile" });
    }
    args.push(mount.readOnly ? "--ro-bind" : "--bind", host, resolve(mount.targetPath.replace(/^~(?=\/|$)/, home)));
  }
  if (plan.workingDir) args.push("--chdir", plan.workingDir);
  return args;
}

/** Profile mounts are `host-path` or `host-path:target-path`. */
function profileMount(spec: string, readOnly: boolean): Mount {
  const drive = /^[A-Za-z]:[\\/]/.test(spec) ? 2 : 0;
  const colon = spec.indexOf(":", drive);
  return colon === -1 ? { hostPath: spec, targetPath: spec, readOnly } : { hostPath: spec.slice(0, colon), targetPath: spec.slice(colon + 1), readOnly };
}
