/**
 * The set-ID guard: how a Docker server container is kept from leaving a set-user-ID program
 * in a writable volume when the daemon uses its compiled-in seccomp profile, which mcpmgr
 * cannot extend (setid-seccomp.ts extends a profile file; docs/security.md W9). The container's
 * first program becomes a tiny static executable of ours (src/runtime/docker/setid-guard/guard.c, embedded
 * by setid-guard-binary.ts) that installs a second filter (setid-filter.ts), refusing set-ID
 * modes only, and then runs the image's own entrypoint and command. Filters stack and the most
 * restrictive answer wins, so Docker's profile keeps deciding everything else.
 *
 * Both files are copied into the container between its creation and its start (owned by root,
 * 0555 and 0444 in a 0555 folder), not bound from mcpmgr's state: a bind needs the engine to see
 * that folder at the same path, which an mcpmgr in a development container using the host's
 * Docker socket (or any other mount namespace) does not give, and its servers without volumes ran
 * there before. The copy is in the container's own writable layer; that the server could change it
 * does not matter, as it runs once, before the server, and every start creates a new container.
 * Only where the guard can run: a Docker engine on a local socket whose own answer (`info`) says
 * Linux on x86_64, the one architecture it is built for, and an image for linux/amd64. A local socket
 * may reach another machine's engine (forwarded over SSH, or a virtual machine's), so this host's
 * architecture says nothing; an image of another architecture runs under emulation, where the
 * guard's filter would judge the emulator's calls, not the server's, and no such start is tested.
 * Elsewhere `run` keeps warning.
 */
import { posix } from "node:path";
import type Docker from "dockerode";
import { pack } from "tar-stream";
import { McpmgrError } from "../../errors.ts";
import type { ContainerEngine } from "./engine.ts";
import type { ImageFacts } from "./images.ts";
import type { EnginePlatform } from "./setid-seccomp.ts";

/** Where the guard's folder is in the container. */
export const GUARD_DIR = "/.mcpmgr-setid-guard";
const GUARD = "guard";
const FILTER = "filter";

/**
 * Whether this engine's containers can get the guard: Docker on a local socket (the guard is
 * copied in through its API; an engine over TCP is not asked, and warns) whose `info` says Linux,
 * x86_64. `platform` is that answer (setid-seccomp.ts enginePlatform); none means it did not answer.
 */
export function guardApplies(engine: ContainerEngine, platform: EnginePlatform | undefined): boolean {
  const local = engine.endpoint.startsWith("/") || engine.endpoint.startsWith("unix://");
  return engine.kind === "docker" && local && platform?.os === "linux" && platform.architecture === "x86_64";
}

/** Whether an image's config says linux/amd64, the platform the guard runs its command on (unset: not known, no guard). */
export function imageTakesGuard(image: Pick<ImageFacts, "os" | "architecture">): boolean {
  return image.os === "linux" && image.architecture === "amd64";
}

/**
 * Refuses a mount at or inside the guard's folder, which the copy would go through: the engine
 * writes into a bound host folder as into the container's own, so a user's folder there would be
 * taken over (made root's, 0555, the guard put in it), and a read-only one would fail the copy.
 */
export function refuseMountOverGuard(
  mounts: readonly { readonly hostPath: string; readonly containerPath: string }[],
): void {
  const over = mounts.find((m) => {
    const path = posix.normalize(`/${m.containerPath}`).replace(/\/+$/, "");
    return path === GUARD_DIR || path.startsWith(`${GUARD_DIR}/`);
  });
  if (over)
    throw new McpmgrError(
      "INVALID_OPTION",
      `the volume ${over.hostPath}:${over.containerPath} is where mcpmgr puts its set-ID guard`,
      {
        hint: `mount it at another path in the container: ${GUARD_DIR} is mcpmgr's own`,
      },
    );
}

/** The tar the engine unpacks at `/`: the guard's folder with the guard and its filter, root's. */
export async function guardArchive(): Promise<Buffer> {
  // Loaded here, not with the launcher: a container on Podman or behind a profile file never needs the
  // guard (13 KB of base64), and a supervisor keeps what it loaded for as long as it runs.
  const { SETID_GUARD_X64 } = await import("./setid-guard-binary.ts");
  // The filter's builder too: it brings the process sandbox's seccomp rules (seccomp.ts) along.
  const { setIdGuardFilter } = await import("../setid-filter.ts");
  const tar = pack();
  const owner = { uid: 0, gid: 0, uname: "root", gname: "root" };
  const name = GUARD_DIR.slice(1);
  tar.entry({ name: `${name}/`, type: "directory", mode: 0o555, ...owner });
  tar.entry({ name: `${name}/${GUARD}`, mode: 0o555, ...owner }, Buffer.from(SETID_GUARD_X64, "base64"));
  tar.entry({ name: `${name}/${FILTER}`, mode: 0o444, ...owner }, Buffer.from(setIdGuardFilter()));
  tar.finalize();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    tar.on("data", (chunk: unknown) => chunks.push(chunk as Buffer));
    tar.on("end", () => resolve(Buffer.concat(chunks)));
    tar.on("error", reject);
  });
}

/** Copies the guard into a created container, before it starts. */
export async function copyGuardInto(container: Docker.Container): Promise<void> {
  await container.putArchive(await guardArchive(), { path: "/" });
}

/**
 * The container's Entrypoint and Cmd with the guard first: the guard, its filter, then the
 * image's own entrypoint, and `run`'s arguments or else the image's Cmd, which is what the
 * engine would have run (an image's Cmd is dropped by the engine once Entrypoint is given, so it
 * is passed on here). Undefined when there is nothing to run: the engine then refuses the
 * container with its own words.
 */
export function guardedCommand(
  image: { readonly entrypoint: readonly string[]; readonly cmd: readonly string[] },
  args: readonly string[],
): { Entrypoint: string[]; Cmd: string[] } | undefined {
  const cmd = args.length > 0 ? args : image.cmd;
  if (image.entrypoint.length === 0 && cmd.length === 0) return undefined;
  return { Entrypoint: [`${GUARD_DIR}/${GUARD}`, `${GUARD_DIR}/${FILTER}`, ...image.entrypoint], Cmd: [...cmd] };
}
