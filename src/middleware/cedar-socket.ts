/**
 * Where the Cedar evaluator of one user (of one mcpmgr home) listens: `RUNTIME/cedar/evaluator-v1.sock`
 * (runtimeDir: `$XDG_RUNTIME_DIR/mcpmgr`, or `MCPMGR_HOME/run`). A Unix socket's path holds at most
 * 107 bytes on Linux (103 on macOS); past that it is `TMP/mcpmgr-cedar-UID-HASH/evaluator-v1.sock`, named
 * after the runtime folder so that each home still has its own evaluator. `v1` is the wire's version
 * (cedar-wire.ts `WIRE_VERSION`): clients speak only to an evaluator that reads their frames.
 *
 * Whoever can connect to the socket can ask decisions of every workload's policies and could stand in
 * for the evaluator (and hand out "allow"), so its folder must be this user's alone: owned by this
 * user, no access for group or others, not a link, and its way up out of other users' reach. The
 * evaluator refuses to start in any other folder, and a client refuses to connect to one.
 */
import { lstatSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { McpmgrError } from "../errors.ts";
import type { McpmgrPaths } from "../state/paths.ts";
import { assertPrivateFolders } from "../state/private-dirs.ts";
import { WIRE_VERSION } from "./cedar-wire.ts";

/** sun_path's 108 bytes on Linux, one of them the terminating NUL; macOS has 104. */
const MAX_SOCKET_PATH_BYTES = process.platform === "linux" ? 107 : 103;
const SOCKET_NAME = `evaluator-v${WIRE_VERSION}.sock`;

/** The evaluator's socket path for this mcpmgr home. */
export function evaluatorSocketPath(paths: McpmgrPaths, uid: number | undefined = process.getuid?.()): string {
  const preferred = join(paths.runtimeDir, "cedar", SOCKET_NAME);
  if (Buffer.byteLength(preferred) <= MAX_SOCKET_PATH_BYTES) return preferred;
  const folder = `mcpmgr-cedar-${uid ?? "user"}-${Bun.hash(paths.runtimeDir).toString(16)}`;
  for (const base of [tmpdir(), "/tmp"]) {
    const path = join(base, folder, SOCKET_NAME);
    if (Buffer.byteLength(path) <= MAX_SOCKET_PATH_BYTES) return path;
  }
  return join("/tmp", folder, SOCKET_NAME);
}

/** Why `dir` is not this user's alone, if it is not (a missing folder is nobody's yet: undefined). */
function notPrivate(dir: string, uid: number): string | undefined {
  const info = lstatSync(dir, { throwIfNoEntry: false });
  if (info === undefined) return undefined;
  if (info.isSymbolicLink()) return `${dir} is a link`;
  if (!info.isDirectory()) return `${dir} is not a folder`;
  if (info.uid !== uid) return `${dir} belongs to uid ${info.uid}`;
  if ((info.mode & 0o077) !== 0) return `${dir} is open to other users (mode ${(info.mode & 0o777).toString(8)})`;
  return undefined;
}

function unsafe(dir: string, why: string): McpmgrError {
  return new McpmgrError("STATE_UNSAFE", `the Cedar evaluator's folder ${dir} is not private: ${why}`, {
    hint: `remove ${dir} (mcpmgr makes it again, mode 0700) or make it yours alone: chmod 700 ${dir}`,
  });
}

/**
 * Makes the socket's folder (mode 0700) when it is missing and checks that it is this user's alone;
 * throws STATE_UNSAFE when it is not.
 */
export function privateSocketFolder(socketPath: string, uid: number | undefined = process.getuid?.()): string {
  const dir = dirname(socketPath);
  if (uid === undefined) return dir;
  // Its way up first: a folder another user can rename entries in could swap ours for theirs.
  assertPrivateFolders([dirname(dir)], "they could stand in for mcpmgr's Cedar evaluator", uid);
  const before = notPrivate(dir, uid);
  if (before !== undefined) throw unsafe(dir, before);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new McpmgrError("STATE_IO", `could not create the Cedar evaluator's folder ${dir}`, {
      hint: "check that the folder above it can be written",
      cause: err,
    });
  }
  const after = notPrivate(dir, uid);
  if (after !== undefined) throw unsafe(dir, after);
  return dir;
}
