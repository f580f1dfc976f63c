/**
 * The Cedar evaluator's socket folder (the path: state/cedar-socket-path.ts, `RUNTIME/cedar/` of the
 * home, or `mcpmgr-cedar-UID-HASH/` in `$XDG_RUNTIME_DIR` or the temporary folder). Whoever can
 * connect to the socket can ask decisions of every workload's policies and could stand in for the
 * evaluator (and hand out "allow"), so its folder must be this user's alone: owned by this user, no
 * access for group or others, not a link, and its way up out of other users' reach. The evaluator
 * refuses to start in any other folder, and a client refuses to connect to one. The servers mcpmgr
 * starts do not see it (runtime/host-paths.ts hides it).
 */
import { lstatSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { McpmgrError } from "../errors.ts";
import { assertPrivateFolders } from "../state/private-dirs.ts";

export { evaluatorSocketPath } from "../state/cedar-socket-path.ts";

/** Why `dir` is not this user's alone, if it is not (a missing folder is nobody's yet: undefined). */
function notPrivate(dir: string, uid: number): McpmgrError | undefined {
  const info = lstatSync(dir, { throwIfNoEntry: false });
  if (info === undefined) return undefined;
  if (info.isSymbolicLink()) return unsafe(dir, `${dir} is a link`);
  if (!info.isDirectory()) return unsafe(dir, `${dir} is not a folder`);
  // Not the user's to remove or chmod: the way out is a socket somewhere else (state/cedar-socket-path.ts).
  if (info.uid !== uid)
    return unsafe(
      dir,
      `${dir} belongs to uid ${info.uid}`,
      "another user made it first: set XDG_RUNTIME_DIR to a runtime folder of yours, or give MCPMGR_HOME a shorter path, and the socket goes there instead",
    );
  if ((info.mode & 0o077) !== 0)
    return unsafe(dir, `${dir} is open to other users (mode ${(info.mode & 0o777).toString(8)})`);
  return undefined;
}

function unsafe(
  dir: string,
  why: string,
  hint = `remove ${dir} (mcpmgr makes it again, mode 0700) or make it yours alone: chmod 700 ${dir}`,
): McpmgrError {
  return new McpmgrError("STATE_UNSAFE", `the Cedar evaluator's folder ${dir} is not private: ${why}`, { hint });
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
  if (before !== undefined) throw before;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new McpmgrError("STATE_IO", `could not create the Cedar evaluator's folder ${dir}`, {
      hint: "check that the folder above it can be written",
      cause: err,
    });
  }
  const after = notPrivate(dir, uid);
  if (after !== undefined) throw after;
  return dir;
}
