/**
 * Starting a server in the process sandbox: the bwrap arguments of sandbox.ts, with the
 * files the sandbox binds (sandbox-files.ts), mcpmgr's directories to hide, the toolchain's
 * install directories, the working directory's view (mount-policy.ts `workingDirView`, decided
 * by the caller at every start: sockets come and go), and the seccomp filter handed over as descriptor 3.
 */
import { homedir } from "node:os";
import { type Env, resolvePaths } from "../state/paths.ts";
import { mcpmgrProtectedDirs } from "./host-paths.ts";
import type { WorkingDirView } from "./mount-policy.ts";
import { launchProcess, type LocalProcess } from "./process.ts";
import { bwrapArgs, bwrapTakesSize, type Mount, type SandboxPlan, toolchainDirs } from "./sandbox.ts";
import { openSeccompFilter, type SandboxFiles, sandboxFiles } from "./sandbox-files.ts";
import { allowsNetwork, type PermissionProfile } from "./permission-profile.ts";

export interface SandboxLaunch {
  readonly bwrap: string;
  readonly command: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** Whether the working directory is shown, and its sockets: the view the grant summary printed. */
  readonly workingDir: WorkingDirView;
  readonly profile: PermissionProfile;
  readonly volumes: readonly Mount[];
  readonly overlays?: SandboxPlan["overlays"];
  readonly emptyFile?: string;
  /** The size of each of the sandbox's tmpfs mounts (/tmp, /dev/shm, home); bwrap's default is half the memory. */
  readonly tmpfsBytes?: number;
  /** The environment that names mcpmgr's directories (MCPMGR_HOME, XDG_*); this process's by default. */
  readonly stateEnv?: Env;
}

/** Descriptor number of the seccomp filter in bwrap: the first after stdin, stdout, stderr. */
const SECCOMP_FD = 3;

/** The bwrap arguments of a launch, with the files they bind. */
async function sandboxArgs(launch: Omit<SandboxLaunch, "env">): Promise<{ args: string[]; files: SandboxFiles }> {
  const home = homedir();
  const stateEnv = launch.stateEnv ?? process.env;
  const files = await sandboxFiles(resolvePaths(stateEnv).dataDir, home);
  const hidden = mcpmgrProtectedDirs(stateEnv);
  const args = bwrapArgs({
    profile: launch.profile,
    volumes: launch.volumes,
    workingDir: launch.cwd,
    ...(launch.workingDir.shown ? { showWorkingDir: { coveredSockets: launch.workingDir.sockets } } : {}),
    home,
    hidden,
    runtimeDirs: toolchainDirs(launch.command, home),
    identity: files,
    seccompFd: SECCOMP_FD,
    ...(launch.tmpfsBytes !== undefined && bwrapTakesSize(launch.bwrap) ? { tmpfsBytes: launch.tmpfsBytes } : {}),
    ...(launch.overlays ? { overlays: launch.overlays } : {}),
    ...(launch.emptyFile ? { emptyFile: launch.emptyFile } : {}),
  });
  return { args, files };
}

/**
 * Without a network, the package managers are told so: npm retried its fetches for over a minute (70 s
 * here) before a start failed, uv and Go would try too. Offline, a package installed in the working
 * directory still runs, and a missing one fails at once (with run's hint, upstream-stdio.ts).
 */
const OFFLINE = { npm_config_offline: "true", UV_OFFLINE: "1", GOPROXY: "off" } as const;

export async function launchInSandbox(launch: SandboxLaunch): Promise<LocalProcess> {
  const { args, files } = await sandboxArgs(launch);
  return launchProcess({
    command: launch.command,
    // The host's TMPDIR may name a directory the sandbox does not show; its /tmp is private.
    // npm keeps no debug log: it would go to the private home and vanish with the sandbox, and
    // npm's last line would send the user to that path, which does not exist on the host. Nor does
    // it look for a newer npm: with a new home at every start it asked the registry every time, and
    // its "npm notice" lines, printed as it exits, were the last output quoted for a server's crash.
    env: {
      TMPDIR: "/tmp",
      npm_config_logs_max: "0",
      npm_config_update_notifier: "false",
      ...(allowsNetwork(launch.profile) ? {} : OFFLINE),
      ...launch.env,
    },
    cwd: launch.cwd,
    sandbox: { bwrap: launch.bwrap, args },
    extraFds: [openSeccompFilter(files)],
  });
}
