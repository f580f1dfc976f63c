/**
 * Symbolic links a server may have planted. Mount sources are resolved to their real paths
 * at every start (W4), so when one mount lies inside another the server can write
 * (`-v ./proj:/work -v ./proj/cache:/cache`, a profile `write` path holding a `-v` source),
 * the server could replace a directory on the way by a link to any host path, exit, and be
 * restarted with that path mounted. A mount source whose path goes through a symbolic link
 * that sits inside a writable mount of the same workload is therefore refused, at every
 * start and in both runtimes; links elsewhere (`/var/run`, the user's own `~/work`) are
 * followed as before.
 */
import { lstatSync, realpathSync } from "node:fs";
import { dirname, sep } from "node:path";
import { McpmgrError } from "../errors.ts";
import { isWithin } from "./host-paths.ts";

export interface GivenMount {
  /** Absolute host path as given (`~` and relative paths expanded, symlinks not resolved). */
  readonly hostPath: string;
  readonly readOnly: boolean;
}

/** Throws UNSAFE_MOUNT when a mount source goes through a symbolic link inside a writable mount. */
export function assertNoPlantedLinks(mounts: readonly GivenMount[]): void {
  const writable = mounts.filter((m) => !m.readOnly).flatMap((m) => realOrNone(m.hostPath));
  if (writable.length === 0) return;
  for (const mount of mounts) {
    const link = linkInside(mount.hostPath, writable);
    if (link === undefined) continue;
    throw new McpmgrError(
      "UNSAFE_MOUNT",
      `mount source ${mount.hostPath} goes through the symbolic link ${link.path}, inside the writable mount ${link.writable}: the server may have put it there to reach other host files`,
      {
        hint: `remove the link (or, if you made it, mount its real path ${realOrNone(mount.hostPath)[0] ?? "(missing)"} instead)`,
      },
    );
  }
}

/** The first symbolic link on `path`'s way whose directory lies in one of `writable`; the walk follows other links. */
function linkInside(path: string, writable: readonly string[]): { path: string; writable: string } | undefined {
  let current: string = sep;
  for (const part of path.split(sep).filter((p) => p !== "")) {
    const next = current === sep ? `${sep}${part}` : `${current}${sep}${part}`;
    const info = lstatSync(next, { throwIfNoEntry: false });
    if (info === undefined) return undefined; // missing: realHostPath says so
    if (info.isSymbolicLink()) {
      // `current` has no link in it: the links before were replaced by their real paths.
      const inside = writable.find((dir) => isWithin(dirname(next), dir));
      if (inside !== undefined) return { path: next, writable: inside };
      const real = realOrNone(next)[0];
      if (real === undefined) return undefined;
      current = real;
    } else current = next;
  }
  return undefined;
}

function realOrNone(path: string): string[] {
  try {
    return [realpathSync(path)];
  } catch {
    return [];
  }
}
