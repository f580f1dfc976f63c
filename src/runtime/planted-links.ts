/**
 * Symbolic links a server may have planted. Mount sources are resolved to their real paths
 * at every start (W4), so when one mount lies inside another the server can write
 * (`-v ./proj:/work -v ./proj/cache:/cache`, a profile `write` path holding a `-v` source),
 * the server could replace a directory on the way by a link to any host path, exit, and be
 * restarted with that path mounted. A mount source whose path goes through a symbolic link
 * that sits inside a writable mount is therefore refused, at every start and in both
 * runtimes: a writable mount of the same workload, or (passed in by the workload layer) of any
 * other recorded workload, whose server can plant the link just as well (A writes `~/shared`,
 * B mounts `~/shared/sub`). Links elsewhere (`/var/run`, the user's own `~/work`) are followed
 * as before.
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

/** A host path another workload's server may write (its writable volume or profile path). */
export interface OtherWritable {
  readonly hostPath: string;
  readonly workload: string;
}

interface Writable {
  readonly real: string;
  /** The other workload it belongs to; undefined for this workload's own mounts. */
  readonly workload?: string;
}

/**
 * Throws UNSAFE_MOUNT when a mount source goes through a symbolic link inside a writable mount:
 * one of `mounts`, or one of `others` (other recorded workloads').
 */
export function assertNoPlantedLinks(mounts: readonly GivenMount[], others: readonly OtherWritable[] = []): void {
  const writable: Writable[] = [
    // Own mounts first: a path both hold is named as this workload's.
    ...mounts.filter((m) => !m.readOnly).flatMap((m) => realOrNone(m.hostPath).map((real) => ({ real }))),
    ...others.flatMap((o) => realOrNone(o.hostPath).map((real) => ({ real, workload: o.workload }))),
  ];
  if (writable.length === 0) return;
  for (const mount of mounts) {
    const link = linkInside(mount.hostPath, writable);
    if (link === undefined) continue;
    const whose = link.writable.workload === undefined ? "" : ` of workload ${link.writable.workload}`;
    const server = link.writable.workload === undefined ? "the server" : `that workload's server`;
    throw new McpmgrError(
      "UNSAFE_MOUNT",
      `mount source ${mount.hostPath} goes through the symbolic link ${link.path}, inside the writable mount ${link.writable.real}${whose}: ${server} may have put it there to reach other host files`,
      {
        hint: `remove the link (or, if you made it, mount its real path ${realOrNone(mount.hostPath)[0] ?? "(missing)"} instead)`,
      },
    );
  }
}

/** The first symbolic link on `path`'s way whose directory lies in one of `writable`; the walk follows other links. */
function linkInside(path: string, writable: readonly Writable[]): { path: string; writable: Writable } | undefined {
  let current: string = sep;
  for (const part of path.split(sep).filter((p) => p !== "")) {
    const next = current === sep ? `${sep}${part}` : `${current}${sep}${part}`;
    const info = lstatSync(next, { throwIfNoEntry: false });
    if (info === undefined) return undefined; // missing: realHostPath says so
    if (info.isSymbolicLink()) {
      // `current` has no link in it: the links before were replaced by their real paths.
      const inside = writable.find((dir) => isWithin(dirname(next), dir.real));
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
