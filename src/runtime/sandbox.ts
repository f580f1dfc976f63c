/**
 * The Linux sandbox of the process runtime: bubblewrap enforcing a permission profile.
 *
 * The server sees an allow-list, not the host (docs/security.md lists it): the system's
 * programs and libraries read-only (/usr and its /bin, /sbin, /lib* links), a handful of
 * /etc files a runtime reads (dynamic linker, certificates, name resolution, time zone) and
 * synthetic passwd/group files, its toolchain's install directory, its package, the working
 * directory (read-only, unless mount-policy.ts refuses where it lies; its sockets covered), the profile's paths and
 * the -v volumes; an empty tmpfs for /tmp and the home directory; its own /proc and a
 * minimal, read-only /dev (with a tmpfs /dev/shm). Everything else (/root, /home, /var, /run and its sockets, the rest of /etc)
 * does not exist in it. mcpmgr's own directories are hidden wherever a mount shows them.
 *
 * It runs as uid/gid 65534 in a user namespace of its own, with every capability dropped,
 * no_new_privs, new pid/ipc/uts/cgroup namespaces (and network, for profile `none`), a new
 * session (no terminal injection), and the seccomp filter of seccomp.ts. Only the profile's
 * `write` paths, read-write volumes, /tmp and the home directory are writable.
 */
import { existsSync, lstatSync, readlinkSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, posix, relative, resolve, sep } from "node:path";
import { McpmgrError } from "../errors.ts";
import { expandHostPath, hiddenTargets, isWithin, realHostPath } from "./host-paths.ts";
import { allowsNetwork, type PermissionProfile } from "./permission-profile.ts";
import { assertNoPlantedLinks } from "./planted-links.ts";

export interface Mount {
  readonly hostPath: string;
  readonly targetPath: string;
  readonly readOnly: boolean;
}

/** The uid and gid the server runs as inside its user namespace (the conventional "nobody"). */
const SANDBOX_UID = 65534;

export interface SandboxPlan {
  readonly profile: PermissionProfile;
  readonly volumes: readonly Mount[];
  /** Install directories of the server's toolchain (node, go, uv), shown read-only. */
  readonly runtimeDirs?: readonly string[];
  /** The directory the server starts in, when something shows it; else it starts in its empty home. */
  readonly workingDir?: string;
  /**
   * Show the working directory read-only at its own path, with each of `coveredSockets` (real
   * paths in it) covered by /dev/null: only when mount-policy.ts `workingDirView` shows it (it
   * does not lie in a system or scratch tree, the home directory whole, credentials). Not
   * shown by default.
   */
  readonly showWorkingDir?: { readonly coveredSockets: readonly string[] };
  readonly home?: string;
  /** Real paths never to show the server (mcpmgr's config, state and secrets), wherever a mount shows them. */
  readonly hidden?: readonly string[];
  /** Ignore-pattern overlays: empty tmpfs over directories, `emptyFile` over files, `protect` re-binds a host file read-only. */
  readonly overlays?: readonly {
    readonly kind: "dir" | "file" | "protect";
    readonly containerPath: string;
    readonly hostPath?: string;
  }[];
  readonly emptyFile?: string;
  /** Host files bound over /etc/passwd and /etc/group (entries for the sandbox's uid only). */
  readonly identity?: { readonly passwd: string; readonly group: string };
  /** The descriptor, in bwrap, of the compiled seccomp filter (seccomp.ts). */
  readonly seccompFd?: number;
  /**
   * The size of /tmp, /dev/shm and the home directory, each (bwrap's --size, from bwrap 0.7). All
   * are tmpfs, held in memory; without a size each may take half of it.
   */
  readonly tmpfsBytes?: number;
}

/** The system's programs and libraries; each is a directory (bound read-only) or a link (recreated). */
const systemDirs = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/**
 * What of /etc a runtime reads: the dynamic linker's cache, CA certificates (not
 * /etc/ssl/private), name resolution, services and protocols, time zone, the alternatives
 * links (/usr/bin/node may point there), MIME types and the OS release. Not shadow files,
 * ssh host keys, npmrc/gitconfig (tokens), machine-id or the engine's configuration.
 */
const etcAllowList = [
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "ssl/certs",
  "ssl/openssl.cnf",
  "ca-certificates",
  "ca-certificates.conf",
  "pki/tls/certs",
  "pki/ca-trust/extracted",
  "crypto-policies/back-ends",
  "resolv.conf",
  "hosts",
  "host.conf",
  "nsswitch.conf",
  "gai.conf",
  "services",
  "protocols",
  "localtime",
  "timezone",
  "alternatives",
  "mime.types",
  "os-release",
];

/** Where bwrap is, or undefined when the profile cannot be enforced here. */
export function findBwrap(): string | undefined {
  if (process.platform !== "linux") return undefined;
  return Bun.which("bwrap") ?? undefined;
}

const takesSize = new Map<string, boolean>();

/**
 * Whether this bwrap sizes a tmpfs (`--size`, bubblewrap 0.7 and later): an older one stops at
 * an option it does not know, so the size is left out there (asked once per binary).
 */
export function bwrapTakesSize(bwrap: string): boolean {
  let known = takesSize.get(bwrap);
  if (known === undefined) {
    const help = Bun.spawnSync([bwrap, "--help"], { stdout: "pipe", stderr: "pipe" });
    known = /^\s*--size\b/m.test(`${help.stdout.toString()}${help.stderr.toString()}`);
    takesSize.set(bwrap, known);
  }
  return known;
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

/** The mounts a plan gives the server besides the system view, in bwrap's order (later ones stack on top). */
function sandboxMounts(plan: SandboxPlan): Mount[] {
  const home = plan.home ?? homedir();
  const given = [
    ...(plan.runtimeDirs ?? []).map((dir) => ({ hostPath: dir, targetPath: dir, readOnly: true })),
    ...(plan.showWorkingDir && plan.workingDir !== undefined
      ? [{ hostPath: plan.workingDir, targetPath: plan.workingDir, readOnly: true }]
      : []),
    ...plan.profile.read.map((spec) => profileMount(spec, true)),
    ...plan.profile.write.map((spec) => profileMount(spec, false)),
    ...plan.volumes,
  ].map((mount) => ({ ...mount, hostPath: expandHostPath(mount.hostPath, home) }));
  // Before anything is resolved: a link the server planted in a writable mount is not followed.
  assertNoPlantedLinks(given);
  return given.map((mount) => ({
    hostPath: realHostPath(mount.hostPath),
    targetPath: resolve(mount.targetPath.replace(/^~(?=\/|$)/, home)),
    readOnly: mount.readOnly,
  }));
}

export function bwrapArgs(plan: SandboxPlan): string[] {
  const home = plan.home ?? homedir();
  const args = [
    "--unshare-user",
    "--uid",
    String(SANDBOX_UID),
    "--gid",
    String(SANDBOX_UID),
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
  if (plan.seccompFd !== undefined) args.push("--seccomp", String(plan.seccompFd));

  // The system view: every source a real path, so what is shown is what was checked.
  const binds: Mount[] = [];
  for (const dir of systemDirs) {
    const info = lstatSync(dir, { throwIfNoEntry: false });
    if (info?.isSymbolicLink()) args.push("--symlink", readlinkSync(dir), dir);
    else if (info?.isDirectory()) binds.push({ hostPath: realpathSync(dir), targetPath: dir, readOnly: true });
  }
  for (const entry of etcAllowList) {
    const path = `/etc/${entry}`;
    const real = existsSync(path) ? realpathSync(path) : undefined;
    if (real !== undefined) binds.push({ hostPath: real, targetPath: path, readOnly: true });
  }
  for (const bind of binds) args.push("--ro-bind", bind.hostPath, bind.targetPath);
  if (plan.identity)
    args.push("--ro-bind", plan.identity.passwd, "/etc/passwd", "--ro-bind", plan.identity.group, "/etc/group");
  // /proc read-only: run by root, the sandbox's uid is the host's uid 0, which owns /proc/sys and
  // writes the host kernel's settings (core_pattern runs a program as root) with no capability.
  // bwrap covers /proc/sys only when the directory itself is writable, which it never is.
  args.push("--proc", "/proc", "--remount-ro", "/proc");
  // /tmp, home and /dev/shm are tmpfs, held in memory: sized (bwrap's default is half the memory,
  // each). bwrap's /dev is such a tmpfs too: read-only, with /dev/shm a mount of its own.
  const size = plan.tmpfsBytes === undefined ? [] : ["--size", String(plan.tmpfsBytes)];
  args.push("--dev", "/dev", ...size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev");
  args.push(...size, "--tmpfs", "/tmp", ...size, "--tmpfs", home);

  const mounts = sandboxMounts(plan);
  // sandboxMounts puts the working directory right after the toolchain's directories.
  const workingDirIndex = plan.showWorkingDir && plan.workingDir !== undefined ? (plan.runtimeDirs ?? []).length : -1;
  mounts.forEach((mount, index) => {
    assertMountPoint(mount.targetPath, [...binds, ...mounts.slice(0, index)]);
    args.push(mount.readOnly ? "--ro-bind" : "--bind", mount.hostPath, mount.targetPath);
    // A socket answers connect() through a read-only bind: the server sees an empty device node in its place.
    if (index === workingDirIndex)
      for (const socket of plan.showWorkingDir?.coveredSockets ?? [])
        if (isWithin(socket, mount.hostPath))
          args.push(
            "--ro-bind",
            "/dev/null",
            posix.join(mount.targetPath, ...relative(mount.hostPath, socket).split(sep)),
          );
  });
  // mcpmgr's directories, wherever a system bind, the working directory or a volume shows them.
  const hidden = hiddenTargets([...binds, ...mounts], plan.hidden ?? []);
  for (const target of hidden) args.push("--tmpfs", target);
  for (const overlay of plan.overlays ?? []) {
    if (overlay.kind === "dir") args.push("--tmpfs", overlay.containerPath, "--remount-ro", overlay.containerPath);
    else if (overlay.kind === "protect" && overlay.hostPath)
      args.push("--ro-bind", overlay.hostPath, overlay.containerPath);
    else if (overlay.kind === "file" && plan.emptyFile) args.push("--ro-bind", plan.emptyFile, overlay.containerPath);
  }
  // The tmpfs hiding mcpmgr's directories are empty covers, read-only: writable, each could take
  // half the host's memory (bwrap's default size). After all of them and the overlays, whose
  // mount points bwrap may create inside them; a remount does not reach the mounts under it.
  for (const target of hidden) args.push("--remount-ro", target);
  // The root itself (bwrap's tmpfs, holding the mount points) is read-only too.
  args.push("--remount-ro", "/");
  // A working directory nothing shows (it holds the home directory, a socket, ...) starts the server in the empty home.
  if (plan.workingDir)
    args.push("--chdir", showsAtOwnPath([...binds, ...mounts], plan.workingDir) ? plan.workingDir : home);
  return args;
}

/**
 * Whether the host directory `dir` is seen at its own path (through the working directory's
 * mount, a volume, the package): the last mount covering that path (later ones stack on top,
 * `-v x:/work` hides a working directory under /work) must show it there.
 */
function showsAtOwnPath(mounts: readonly Mount[], dir: string): boolean {
  const realDir = existsSync(dir) ? realpathSync(dir) : undefined;
  const covering = mounts.filter((m) => isWithin(dir, m.targetPath)).at(-1);
  return covering !== undefined && resolve(covering.hostPath, relative(covering.targetPath, resolve(dir))) === realDir;
}

/**
 * bwrap creates missing mount points in its own root, but not inside a read-only bind
 * (the system directories, the working directory, a read-only volume): such a target must
 * already exist in the bound host directory.
 */
function assertMountPoint(target: string, earlier: readonly Mount[]): void {
  const covering = earlier.filter((m) => isWithin(target, m.targetPath)).at(-1);
  if (covering === undefined || !covering.readOnly || covering.targetPath === target) return;
  const rel = relative(covering.targetPath, target);
  if (existsSync(resolve(covering.hostPath, ...rel.split(posix.sep)))) return;
  throw new McpmgrError(
    "INVALID_OPTION",
    `cannot mount at ${target}: it would be created inside ${covering.targetPath}, which the sandbox shows read-only`,
    { hint: `mount at a path of its own (e.g. -v ./data:/data), or at an existing path in ${covering.targetPath}` },
  );
}

/**
 * Install directories of the programs a command runs with: the command's own binary and
 * the interpreters it needs (`node` for npx), each as the real path's prefix (the parent of
 * its bin/ directory: ~/.nvm/versions/node/v22, /opt/go), unless it is already in the
 * system view. A prefix that is a home directory, ~/.local or / itself would show far more
 * than the toolchain: then only the binary's own directory is shown.
 */
export function toolchainDirs(command: readonly string[], home = homedir(), which = Bun.which): string[] {
  const programs = [command[0], ...(command[0]?.endsWith("npx") ? ["node"] : [])];
  const dirs = new Set<string>();
  for (const program of programs) {
    if (program === undefined) continue;
    const found = program.includes("/") ? program : which(program);
    if (found === null || !existsSync(found)) continue;
    const real = realpathSync(found);
    if (systemDirs.some((dir) => existsSync(dir) && isWithin(real, realpathSync(dir)))) continue;
    const binDir = dirname(real);
    const prefix = dirname(binDir);
    const tooBroad = [home, resolve(home, ".local"), "/", "/opt", "/usr/local"].includes(prefix) || prefix === sep;
    dirs.add(tooBroad ? binDir : prefix);
  }
  return [...dirs];
}

/** Profile mounts are `host-path` or `host-path:target-path`. */
export function profileMount(spec: string, readOnly: boolean): Mount {
  const drive = /^[A-Za-z]:[\\/]/.test(spec) ? 2 : 0;
  const colon = spec.indexOf(":", drive);
  return colon === -1
    ? { hostPath: spec, targetPath: spec, readOnly }
    : { hostPath: spec.slice(0, colon), targetPath: spec.slice(colon + 1), readOnly };
}

/** /etc/passwd and /etc/group lines for the sandbox: its own user (home: the empty home directory) and root. */
export function sandboxIdentity(home: string): { passwd: string; group: string } {
  return {
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:${SANDBOX_UID}:${SANDBOX_UID}:MCP server (mcpmgr sandbox):${home}:/usr/sbin/nologin\n`,
    group: `root:x:0:\nnogroup:x:${SANDBOX_UID}:\n`,
  };
}
