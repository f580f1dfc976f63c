/**
 * The seccomp profile of a server container: the engine's own default profile, read from the
 * engine's own file, plus one rule: no mode with the set-user-ID or set-group-ID bit. On a
 * rootful engine the container's root is the host's uid 0 and owns what it creates in a
 * writable volume; an owner sets those bits without any capability, and a `nosuid` mount in
 * the container holds only there (the host's users reach the file through the host's own
 * mount), so a program left that way ran as root for every user of the host. Docker compiles
 * its default profile in and shows no file: then there is nothing to extend without replacing
 * Docker's profile by another, and the engine's default is kept (docs/security.md says so).
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import type { ContainerEngine } from "./engine.ts";

/** The mode argument's index for each call that sets or creates a mode (the same on every ABI we run). */
const MODE_ARG: Readonly<Record<string, number>> = {
  chmod: 1,
  fchmod: 1,
  fchmodat: 2,
  creat: 1,
  mkdir: 1,
  mkdirat: 2,
  mknod: 1,
  mknodat: 2,
  open: 2,
  openat: 3,
};
/** open/openat: the flags argument; the mode matters only with O_CREAT or O_TMPFILE. */
const FLAGS_ARG: Readonly<Record<string, number>> = { open: 1, openat: 2 };
const O_CREAT = 0o100;
const O_TMPFILE_BIT = 0o20000000; // __O_TMPFILE, without O_DIRECTORY (x86 and Arm)
const SET_ID = 0o6000;
/** Calls whose mode the filter cannot read (openat2's is in a struct, io_uring's in shared memory), or too new: ENOSYS, so libraries fall back. */
const UNREADABLE = ["openat2", "fchmodat2", "io_uring_setup", "io_uring_enter", "io_uring_register"];
const EPERM = 1;
const ENOSYS = 38;

interface Rule {
  names: string[];
  action: string;
  [key: string]: unknown;
}
interface Profile {
  syscalls?: Rule[];
  [key: string]: unknown;
}

const masked = (index: number, mask: number, value: number) => ({
  index,
  value: mask,
  valueTwo: value,
  op: "SCMP_CMP_MASKED_EQ",
});

/**
 * The profile with the mode rule added. Only calls the engine's profile allowed are allowed
 * again, each only without the set-ID bits: nothing it refuses becomes allowed. The allow and
 * refuse rules of one call never match the same arguments (libseccomp would have to choose).
 */
export function withoutSetIdModes(profile: Profile): Profile {
  const ours = new Set([...Object.keys(MODE_ARG), ...UNREADABLE]);
  const allowed = new Set<string>();
  const syscalls: Rule[] = [];
  for (const rule of profile.syscalls ?? []) {
    if (rule.action !== "SCMP_ACT_ALLOW") {
      syscalls.push(rule);
      continue;
    }
    for (const name of rule.names) if (ours.has(name)) allowed.add(name);
    const names = rule.names.filter((name) => !ours.has(name));
    if (names.length > 0) syscalls.push({ ...rule, names });
  }
  for (const [name, modeArg] of Object.entries(MODE_ARG)) {
    if (!allowed.has(name)) continue;
    const flagsArg = FLAGS_ARG[name];
    syscalls.push({ names: [name], action: "SCMP_ACT_ALLOW", args: [masked(modeArg, SET_ID, 0)] });
    if (flagsArg !== undefined)
      syscalls.push({ names: [name], action: "SCMP_ACT_ALLOW", args: [masked(flagsArg, O_CREAT | O_TMPFILE_BIT, 0)] });
    // EPERM rather than the profile's default errno (Podman's is ENOSYS): the call exists, the mode is refused.
    for (const bits of [0o2000, 0o4000, 0o6000]) {
      if (flagsArg === undefined)
        syscalls.push({
          names: [name],
          action: "SCMP_ACT_ERRNO",
          errnoRet: EPERM,
          args: [masked(modeArg, SET_ID, bits)],
        });
      else
        for (const flag of [O_CREAT, O_TMPFILE_BIT])
          syscalls.push({
            names: [name],
            action: "SCMP_ACT_ERRNO",
            errnoRet: EPERM,
            args: [masked(flagsArg, flag, flag), masked(modeArg, SET_ID, bits)],
          });
    }
  }
  const unreadable = UNREADABLE.filter((name) => allowed.has(name));
  if (unreadable.length > 0) syscalls.push({ names: unreadable, action: "SCMP_ACT_ERRNO", errnoRet: ENOSYS });
  return { ...profile, syscalls };
}

/** The path of the engine's default seccomp profile file, when it has one this host can read. */
async function engineProfilePath(engine: ContainerEngine): Promise<string | undefined> {
  // A path names a file on the engine's host: only a local socket's engine shares this one's files
  // (and only on Linux: elsewhere the engine runs in a virtual machine).
  const local = engine.endpoint.startsWith("/") || engine.endpoint.startsWith("unix://");
  if (!local || process.platform !== "linux") return undefined;
  if (engine.kind === "podman") {
    // Its Docker-compatible /info names no path ("profile=default"); its own libpod API (served only
    // under a version prefix; Podman 4 and 5 accept v4.0.0) does.
    const modem = engine.docker.modem as unknown as {
      dial(options: object, callback: (error: unknown, data: unknown) => void): void;
    };
    const info = await new Promise<{ host?: { security?: { seccompEnabled?: boolean; seccompProfilePath?: string } } }>(
      (resolve, reject) =>
        modem.dial({ path: "/v4.0.0/libpod/info?", method: "GET", statusCodes: { 200: true } }, (error, data) =>
          error ? reject(error) : resolve(data as never),
        ),
    );
    const security = info.host?.security;
    return security?.seccompEnabled ? security.seccompProfilePath : undefined;
  }
  // Docker: `name=seccomp,profile=PATH` when the daemon was given a profile; "default"/"builtin" is compiled in.
  const info = (await engine.docker.info()) as { SecurityOptions?: string[] };
  for (const option of info.SecurityOptions ?? []) {
    const fields = new Map(option.split(",").map((field) => field.split("=", 2) as [string, string]));
    if (fields.get("name") === "seccomp") return fields.get("profile");
  }
  return undefined;
}

const cache = new Map<string, Promise<string | undefined>>();

/**
 * The profile (JSON text) for this engine's server containers, or undefined when the engine's
 * default cannot be read: the engine's own default then applies. Read once per engine and process.
 */
export function setIdSeccompProfile(engine: ContainerEngine): Promise<string | undefined> {
  let found = cache.get(engine.endpoint);
  if (!found) {
    found = engineProfilePath(engine)
      .then((path) => {
        if (!path || !isAbsolute(path) || !existsSync(path)) return undefined;
        const profile = JSON.parse(readFileSync(path, "utf8")) as Profile;
        return Array.isArray(profile.syscalls) ? JSON.stringify(withoutSetIdModes(profile)) : undefined;
      })
      .catch(() => undefined);
    cache.set(engine.endpoint, found);
  }
  return found;
}

/**
 * The `seccomp=` security option for a server container, or undefined (the engine's default).
 * Docker takes the profile's text; Podman's compatible API takes only a path, so the profile
 * is written to `dir` (mcpmgr's state, never shown to a container), named by its content.
 */
export async function setIdSeccompOption(engine: ContainerEngine, dir: string): Promise<string | undefined> {
  const profile = await setIdSeccompProfile(engine);
  if (profile === undefined) return undefined;
  if (engine.kind === "docker") return `seccomp=${profile}`;
  const path = join(dir, `${createHash("sha256").update(profile).digest("hex").slice(0, 16)}.json`);
  if (!existsSync(path)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // Another mcpmgr may write the same file at once: each renames a whole copy over it.
    const partial = `${path}.${process.pid}.partial`;
    writeFileSync(partial, profile, { mode: 0o600 });
    renameSync(partial, path);
  }
  return `seccomp=${path}`;
}
