/**
 * Where the Cedar evaluator of one mcpmgr home listens (middleware/cedar-socket.ts checks its folder,
 * middleware/cedar-evaluator.ts serves it): `RUNTIME/cedar/evaluator-vW-BUILD.sock`. A Unix socket's
 * path holds at most 107 bytes on Linux (103 on macOS); past that it is
 * `BASE/mcpmgr-cedar-UID-HASH/evaluator-vW-BUILD.sock`, named after the runtime folder so that each home
 * still has its own evaluator. BASE is the user's own runtime folder (`$XDG_RUNTIME_DIR`, which an
 * `MCPMGR_HOME` does not use: no other user can make the folder there first) when it is set and short
 * enough, else the temporary folder (where another user may, which only stops that home's evaluator:
 * it is refused as not private). Here, below middleware, because the runtimes must hide that folder
 * from the servers they start wherever a volume shows it (runtime/host-paths.ts): it lies outside
 * mcpmgr's home, and a server that reaches the socket could ask the evaluator or stand in for it.
 *
 * `W` is the wire's version, `BUILD` the executable that starts the evaluator (its version, commit and
 * path; from source, the source tree): after an upgrade, clients start an evaluator of the new build
 * instead of asking the old one, whose engine and decision code may be the ones the upgrade replaced,
 * for as long as old workloads keep it alive.
 */
import { statSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { tmpdir } from "node:os";
import { commit, version } from "../version.ts";
import type { Env, McpmgrPaths } from "./paths.ts";

/** The frames' version (middleware/cedar-wire.ts): raised with any change to them. */
export const WIRE_VERSION = 2;

/** sun_path's 108 bytes on Linux, one of them the terminating NUL; macOS has 104. */
const MAX_SOCKET_PATH_BYTES = process.platform === "linux" ? 107 : 103;

/** What tells one build from another: its version, commit and executable (from source: its tree too). */
export interface BuildIdentity {
  readonly version: string;
  readonly commit: string;
  readonly executable: string;
  readonly source: string;
}

function thisBuild(): BuildIdentity {
  return { version, commit, executable: process.execPath, source: commit === "development" ? import.meta.dir : "" };
}

/** The socket's name: the same length whatever the build, so the choice of folder does not depend on it. */
export function evaluatorSocketName(build: BuildIdentity = thisBuild()): string {
  const text = `${build.version}\0${build.commit}\0${build.executable}\0${build.source}`;
  const tag = BigInt.asUintN(64, BigInt(Bun.hash(text)))
    .toString(16)
    .padStart(16, "0")
    .slice(0, 12);
  return `evaluator-v${WIRE_VERSION}-${tag}.sock`;
}

/** Whether `dir` is an existing folder of this user's (a runtime folder left from another login is not). */
function ownFolder(dir: string | undefined, uid: number | undefined): boolean {
  if (dir === undefined || !isAbsolute(dir) || uid === undefined) return false;
  try {
    const info = statSync(dir, { throwIfNoEntry: false });
    return info?.isDirectory() === true && info.uid === uid;
  } catch {
    return false; // not reachable (EACCES, ENOTDIR): not a folder to use
  }
}

/** The evaluator's socket path for this mcpmgr home. */
export function evaluatorSocketPath(
  paths: McpmgrPaths,
  uid: number | undefined = process.getuid?.(),
  env: Env = process.env,
): string {
  const name = evaluatorSocketName();
  const preferred = join(paths.runtimeDir, "cedar", name);
  if (Buffer.byteLength(preferred) <= MAX_SOCKET_PATH_BYTES) return preferred;
  const folder = `mcpmgr-cedar-${uid ?? "user"}-${Bun.hash(paths.runtimeDir).toString(16)}`;
  const userRuntime = ownFolder(env.XDG_RUNTIME_DIR, uid) ? [env.XDG_RUNTIME_DIR as string] : [];
  for (const base of [...userRuntime, tmpdir(), "/tmp"]) {
    const path = join(base, folder, name);
    if (Buffer.byteLength(path) <= MAX_SOCKET_PATH_BYTES) return path;
  }
  return join("/tmp", folder, name);
}
