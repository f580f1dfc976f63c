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
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { isAbsolute, join } from "node:path";
import { withLock } from "../../state/lock.ts";
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
  names?: string[];
  /** The older single-name form engines still read. */
  name?: string;
  action: string;
  args?: { index: number; [key: string]: unknown }[];
  [key: string]: unknown;
}
interface Profile {
  defaultAction?: string;
  syscalls?: Rule[];
  [key: string]: unknown;
}

/** Actions that let the call run (LOG runs it and logs it). */
const LETS_RUN = new Set(["SCMP_ACT_ALLOW", "SCMP_ACT_LOG"]);

const masked = (index: number, mask: number, value: number) => ({
  index,
  value: mask,
  valueTwo: value,
  op: "SCMP_CMP_MASKED_EQ",
});

/** The refusals of one mode call: any set-ID bit (with O_CREAT or O_TMPFILE for open/openat). */
function refusals(name: string, modeArg: number): Rule[] {
  const flagsArg = FLAGS_ARG[name];
  const rules: Rule[] = [];
  // EPERM rather than the profile's default errno (Podman's is ENOSYS): the call exists, the mode is refused.
  for (const bits of [0o2000, 0o4000, 0o6000]) {
    if (flagsArg === undefined)
      rules.push({ names: [name], action: "SCMP_ACT_ERRNO", errnoRet: EPERM, args: [masked(modeArg, SET_ID, bits)] });
    else
      for (const flag of [O_CREAT, O_TMPFILE_BIT])
        rules.push({
          names: [name],
          action: "SCMP_ACT_ERRNO",
          errnoRet: EPERM,
          args: [masked(flagsArg, flag, flag), masked(modeArg, SET_ID, bits)],
        });
  }
  return rules;
}

/**
 * The engine's rule letting `name` run, narrowed to modes without the set-ID bits: its own
 * conditions (arguments, capabilities, architectures, kernel) are kept and ours added to them.
 * When it already compares the mode or flags argument, the two comparisons of one argument
 * would be read as alternatives by some runtimes: the call is not let run at all.
 */
function narrowed(rule: Rule, name: string, modeArg: number): Rule[] {
  const flagsArg = FLAGS_ARG[name];
  const own = rule.args ?? [];
  if (own.some((arg) => arg.index === modeArg || arg.index === flagsArg)) return [];
  const { name: _single, ...rest } = rule;
  const rules: Rule[] = [{ ...rest, names: [name], args: [...own, masked(modeArg, SET_ID, 0)] }];
  if (flagsArg !== undefined)
    rules.push({ ...rest, names: [name], args: [...own, masked(flagsArg, O_CREAT | O_TMPFILE_BIT, 0)] });
  return rules;
}

/**
 * The profile with the mode rule added. A call is let run again only where the engine's
 * profile let it run (same conditions), and only without the set-ID bits: nothing it refuses
 * becomes allowed. The allow and refuse rules of one call never match the same arguments
 * (libseccomp would have to choose). A profile that lets everything run unless a rule says
 * otherwise gets only the refusals; one that also names our calls in its own refusals is not
 * one we can reason about, and is rejected (the caller then keeps the engine's and warns).
 */
export function withoutSetIdModes(profile: Profile): Profile {
  const ours = new Set([...Object.keys(MODE_ARG), ...UNREADABLE]);
  const allowsByDefault = LETS_RUN.has(profile.defaultAction ?? "");
  const letRun = new Set<string>();
  const syscalls: Rule[] = [];
  const added: Rule[] = [];
  for (const rule of profile.syscalls ?? []) {
    const names = rule.names ?? (rule.name !== undefined ? [rule.name] : []);
    const mine = names.filter((name) => ours.has(name));
    if (!LETS_RUN.has(rule.action)) {
      if (allowsByDefault && mine.length > 0)
        throw new Error(`the profile's own ${rule.action} rule for ${mine.join(", ")} cannot be combined`);
      syscalls.push(rule);
      continue;
    }
    const others = names.filter((name) => !ours.has(name));
    if (others.length > 0) {
      const { name: _single, ...rest } = rule;
      syscalls.push({ ...rest, names: others });
    }
    for (const name of mine) {
      letRun.add(name);
      // Where everything runs by default, the engine's rule adds nothing: only the refusals below matter.
      const modeArg = MODE_ARG[name];
      if (!allowsByDefault && modeArg !== undefined) added.push(...narrowed(rule, name, modeArg));
    }
  }
  const refused = (name: string) => allowsByDefault || letRun.has(name);
  for (const [name, modeArg] of Object.entries(MODE_ARG)) if (refused(name)) added.push(...refusals(name, modeArg));
  const unreadable = UNREADABLE.filter(refused);
  if (unreadable.length > 0) added.push({ names: unreadable, action: "SCMP_ACT_ERRNO", errnoRet: ENOSYS });
  return { ...profile, syscalls: [...syscalls, ...added] };
}

/**
 * What the engine says of itself: the path of its default seccomp profile file, when it names one,
 * and (Docker's /info) the operating system and machine its containers run on, which decide whether
 * the set-ID guard can run there (setid-guard.ts). One question for both.
 */
interface EngineAnswer {
  readonly profilePath?: string;
  readonly platform?: EnginePlatform;
}
/** The engine's `OSType` and `Architecture` (the kernel's machine name: "x86_64", "aarch64"). */
export interface EnginePlatform {
  readonly os: string;
  readonly architecture: string;
}

async function askEngine(engine: ContainerEngine): Promise<EngineAnswer> {
  // Only a local socket's engine is asked: a path names a file on the engine's host, which only a
  // local socket's engine shares with this one, and the guard is given only to such an engine.
  const local = engine.endpoint.startsWith("/") || engine.endpoint.startsWith("unix://");
  if (!local) return {};
  if (engine.kind === "podman") {
    if (process.platform !== "linux") return {};
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
    return security?.seccompEnabled && security.seccompProfilePath ? { profilePath: security.seccompProfilePath } : {};
  }
  const info = (await engine.docker.info()) as { SecurityOptions?: string[]; OSType?: string; Architecture?: string };
  // A local socket can still reach an engine of another machine (an SSH-forwarded socket, a virtual
  // machine's engine): its own answer, not this host's, says where its containers run. Its profile
  // path is a file of this host only on Linux (elsewhere the engine runs in a virtual machine).
  const profilePath = process.platform === "linux" ? dockerSeccompProfile(info.SecurityOptions ?? []) : undefined;
  return {
    ...(profilePath !== undefined ? { profilePath } : {}),
    platform: { os: info.OSType ?? "", architecture: info.Architecture ?? "" },
  };
}

/**
 * The profile named by Docker's /info `SecurityOptions`: `name=seccomp,profile=PATH` when the daemon
 * was given a profile file; "default"/"builtin" is compiled in. A field's value is all after its first
 * "=" (a path may hold one; `split("=", 2)` would cut it there).
 */
export function dockerSeccompProfile(securityOptions: readonly string[]): string | undefined {
  for (const option of securityOptions) {
    const fields = new Map(
      option.split(",").map((field) => {
        const at = field.indexOf("=");
        return at === -1 ? [field, ""] : [field.slice(0, at), field.slice(at + 1)];
      }),
    );
    if (fields.get("name") === "seccomp") return fields.get("profile");
  }
  return undefined;
}

/** A failed look-up (the engine did not answer, the file did not parse) is asked again after this. */
export const RETRY_AFTER_MS = 10_000;
/** A profile file no start has used for this long is removed (a start needs it for seconds). */
export const UNUSED_PROFILE_MS = 24 * 60 * 60 * 1000;

interface Lookup {
  readonly profile: Promise<string | undefined>;
  readonly platform: Promise<EnginePlatform | undefined>;
  /** When it failed (undefined: an answer, kept for the process; the engine's default is its configuration). */
  failedAt?: number;
}
const cache = new Map<string, Lookup>();

/**
 * The engine's answer, asked once per process (the set-ID guard's decision and the profile share it,
 * so a start asks no more than it did), or again after a failure once RETRY_AFTER_MS has passed, so a
 * long-lived supervisor whose engine was briefly unreachable asks again at a later container start
 * (`now`: tests pass their clock).
 */
function lookup(engine: ContainerEngine, now: number): Lookup {
  const known = cache.get(engine.endpoint);
  if (known !== undefined && (known.failedAt === undefined || now - known.failedAt < RETRY_AFTER_MS)) return known;
  const started = performance.now();
  // From when it failed, not when it was asked: an engine that takes seconds to fail (under load,
  // or until a client times out) would otherwise be asked again by every start after the first.
  const failed = () => {
    entry.failedAt = now + (performance.now() - started);
    return undefined;
  };
  const answer = askEngine(engine);
  const entry: Lookup = {
    profile: answer
      .then(({ profilePath: path }) => {
        if (!path || !isAbsolute(path) || !existsSync(path)) return undefined;
        const profile = JSON.parse(readFileSync(path, "utf8")) as Profile;
        return Array.isArray(profile.syscalls) ? JSON.stringify(withoutSetIdModes(profile)) : undefined;
      })
      .catch(failed),
    // Its own failure only: a profile file that does not parse says nothing of the engine's machine.
    platform: answer.then(({ platform }) => platform).catch(failed),
  };
  cache.set(engine.endpoint, entry);
  return entry;
}

/**
 * The profile (JSON text) for this engine's server containers, or undefined when the engine's
 * default cannot be read: the engine's own default then applies.
 */
export function setIdSeccompProfile(engine: ContainerEngine, now = Date.now()): Promise<string | undefined> {
  return lookup(engine, now).profile;
}

/** The OS and architecture a local Docker engine says its containers run on; undefined otherwise or when it did not answer. */
export function enginePlatform(engine: ContainerEngine, now = Date.now()): Promise<EnginePlatform | undefined> {
  return lookup(engine, now).platform;
}

/**
 * The `seccomp=` security option for a server container, or undefined (the engine's default).
 * Docker takes the profile's text; Podman's compatible API takes only a path, so the profile
 * is written to `dir` (mcpmgr's state, never shown to a container), named by its content.
 */
export async function setIdSeccompOption(
  engine: ContainerEngine,
  dir: string,
  now = Date.now(),
): Promise<string | undefined> {
  const profile = await setIdSeccompProfile(engine, now);
  if (profile === undefined) return undefined;
  if (engine.kind === "docker") return `seccomp=${profile}`;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const name = `${createHash("sha256").update(profile).digest("hex").slice(0, 16)}.json`;
  const path = join(dir, name);
  // Under the folder's lock, shared with the pruning: a file is touched (or written) here, then read by
  // the engine within seconds, and a prune removes only what no start touched for a day, so no start
  // loses its file to another mcpmgr's prune between the two.
  await withLock(join(dir, ".lock"), () => {
    if (readIfPresent(path) === profile) utimesSync(path, now / 1000, now / 1000);
    else {
      // Another mcpmgr (an older one, without the lock) may write the same file at once: each renames a whole copy over it.
      const partial = `${path}.${process.pid}.partial`;
      writeFileSync(partial, profile, { mode: 0o600 });
      utimesSync(partial, now / 1000, now / 1000);
      renameSync(partial, path);
    }
    pruneUnused(dir, name, now);
  });
  return `seccomp=${path}`;
}

function readIfPresent(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined; // absent, or unreadable: written anew
  }
}

/**
 * Profiles of earlier engine versions (each engine upgrade that changes its default makes a new
 * name) and partial copies a killed writer left: removed once unused for UNUSED_PROFILE_MS.
 */
function pruneUnused(dir: string, keep: string, now: number): void {
  for (const entry of readdirSync(dir)) {
    if (entry === keep || !/^[0-9a-f]{16}\.json(?:\.\d+\.partial)?$/.test(entry)) continue;
    const file = join(dir, entry);
    try {
      if (now - statSync(file).mtimeMs > UNUSED_PROFILE_MS) unlinkSync(file);
    } catch {
      // Gone already (another prune), or not ours to remove: left.
    }
  }
}
