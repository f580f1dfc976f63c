/**
 * Unix sockets under a host directory. A read-only bind does not stop connect() on a socket,
 * and the process sandbox's uid is the invoking user's on the host (a container's root is
 * root), so a mounted directory holding a tmux server's, an ssh agent's, an X server's or a
 * container engine's socket hands the server what answers there. Mount decisions that are
 * not the user's own explicit grant (a registry entry's paths, the working directory) look
 * for sockets first.
 *
 * The walk never follows symbolic links (inside the sandbox or container a link resolves in
 * the server's own view, not the host's) and is bounded: past `maxEntries` entries, or at a
 * directory it cannot list, it cannot say "no socket", and says so.
 */
import { type Dirent, readdirSync } from "node:fs";
import { join } from "node:path";
import { errnoCode } from "../state/atomic-file.ts";
import { isWithin } from "./host-paths.ts";

/** Entries looked at before giving up (a few hundred milliseconds on a loaded machine). */
export const SOCKET_SCAN_MAX_ENTRIES = 50_000;

export type SocketScan =
  | { readonly kind: "none" }
  | { readonly kind: "socket"; readonly path: string }
  | { readonly kind: "too-big"; readonly maxEntries: number }
  | { readonly kind: "unreadable"; readonly path: string; readonly code: string };

/**
 * The first socket below `dir` (a real path to a directory), walking depth first; `skip`
 * lists real paths not descended into (mcpmgr's own directories, hidden by the runtimes).
 */
export function findSocket(
  dir: string,
  options: { readonly maxEntries?: number; readonly skip?: readonly string[] } = {},
): SocketScan {
  const maxEntries = options.maxEntries ?? SOCKET_SCAN_MAX_ENTRIES;
  let left = maxEntries;
  const pending = [dir];
  for (let current = pending.pop(); current !== undefined; current = pending.pop()) {
    let entries: Dirent[];
    try {
      entries = readdirSync(current, { withFileTypes: true });
    } catch (err) {
      const code = errnoCode(err) ?? "error";
      // Gone between the listing and now: nothing of it can be shown either.
      if (code === "ENOENT" || code === "ENOTDIR") continue;
      return { kind: "unreadable", path: current, code };
    }
    left -= entries.length;
    if (left < 0) return { kind: "too-big", maxEntries };
    for (const entry of entries) {
      const path = join(current, entry.name);
      if (entry.isSocket()) return { kind: "socket", path };
      if (entry.isDirectory() && !(options.skip ?? []).some((skipped) => isWithin(path, skipped))) pending.push(path);
    }
  }
  return { kind: "none" };
}

/** Why a scan forbids showing the directory, in words for an error or a grant line; undefined when it found none. */
export function socketScanReason(scan: SocketScan): string | undefined {
  switch (scan.kind) {
    case "none":
      return undefined;
    case "socket":
      return `it holds the socket ${scan.path} (a program answers there as you)`;
    case "too-big":
      return `it holds more than ${scan.maxEntries} entries, too many to check for sockets`;
    case "unreadable":
      return `${scan.path} cannot be listed (${scan.code}) to check for sockets`;
  }
}
