/**
 * Unix sockets under a host directory. A read-only bind does not stop connect() on a socket,
 * and the process sandbox's uid is the invoking user's on the host (a container's root is
 * root), so a mounted directory holding a tmux server's, an ssh agent's, an X server's or a
 * container engine's socket hands the server what answers there. Mount decisions that are
 * not the user's own explicit grant (a registry entry's paths, the working directory) look
 * for sockets first.
 *
 * The working directory's sockets come from the kernel's list of bound sockets
 * (/proc/net/unix), so the cost follows the number of sockets, not the size of the tree; a
 * walk is the fallback where that list cannot be read. A registry mount is refused outright
 * when the bounded walk finds a socket or cannot finish.
 *
 * The walk never follows symbolic links (inside the sandbox or container a link resolves in
 * the server's own view, not the host's) and is bounded: past `maxEntries` entries, or at a
 * directory it cannot list, it cannot say "no socket", and says so.
 */
import { type Dirent, lstatSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { errnoCode } from "../state/atomic-file.ts";
import { isWithin } from "./host-paths.ts";

/** Entries looked at before giving up (a few hundred milliseconds on a loaded machine). */
const SOCKET_SCAN_MAX_ENTRIES = 50_000;

export type SocketScan =
  | { readonly kind: "none" }
  | { readonly kind: "socket"; readonly path: string }
  | { readonly kind: "too-big"; readonly maxEntries: number }
  | { readonly kind: "unreadable"; readonly path: string; readonly code: string };

/** The kernel's list of Unix sockets bound to a path in this network namespace. */
const PROC_NET_UNIX = "/proc/net/unix";

/**
 * The sockets below `dir` (a real path to a directory), as real paths, each checked with
 * lstat to be a socket there now; `skip` lists real paths left out (mcpmgr's own directories,
 * hidden anyway). Read from `procNetUnix`; only when it cannot be read, from a walk that
 * returns what it found within its budget (the caller covers those, it does not refuse).
 * The kernel lists sockets bound in this network namespace: one bound by a process in a
 * container's namespace is not in it.
 */
export function socketsBelow(
  dir: string,
  options: { readonly skip?: readonly string[]; readonly procNetUnix?: string; readonly maxEntries?: number } = {},
): string[] {
  const skip = options.skip ?? [];
  const bound = boundSocketPaths(options.procNetUnix ?? PROC_NET_UNIX);
  const candidates = bound ?? walkSockets(dir, skip, options.maxEntries ?? SOCKET_SCAN_MAX_ENTRIES);
  const found = new Set<string>();
  for (const path of candidates) {
    const real = realSocketPath(path);
    if (real === undefined || !isWithin(real, dir) || skip.some((skipped) => isWithin(real, skipped))) continue;
    if (lstatSync(real, { throwIfNoEntry: false })?.isSocket()) found.add(real);
  }
  return [...found].sort();
}

/** The path names in /proc/net/unix (abstract and unnamed sockets have none); undefined when it cannot be read. */
function boundSocketPaths(procNetUnix: string): string[] | undefined {
  let text: string;
  try {
    text = readFileSync(procNetUnix, "utf8");
  } catch {
    return undefined;
  }
  const paths: string[] = [];
  // "Num RefCount Protocol Flags Type St Inode Path": the path is the rest of the line after seven fields.
  for (const line of text.split("\n").slice(1)) {
    const match = /^\S+:?\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+(\/.*)$/.exec(line);
    if (match?.[1]) paths.push(match[1]);
  }
  return paths;
}

/** A socket's real path: its directory resolved (it may have been bound through a link), the name kept. */
function realSocketPath(path: string): string | undefined {
  try {
    return join(realpathSync(dirname(path)), path.slice(dirname(path).length + 1));
  } catch {
    return undefined;
  }
}

/** Sockets a bounded walk finds (the fallback): what lies past the budget or in an unreadable directory is not seen. */
function walkSockets(dir: string, skip: readonly string[], maxEntries: number): string[] {
  const found: string[] = [];
  let left = maxEntries;
  const pending = [dir];
  for (let current = pending.pop(); current !== undefined && left > 0; current = pending.pop()) {
    let entries: Dirent[];
    try {
      entries = readdirSync(current, { withFileTypes: true });
    } catch {
      continue;
    }
    left -= entries.length;
    for (const entry of entries) {
      const path = join(current, entry.name);
      if (entry.isSocket()) found.push(path);
      else if (entry.isDirectory() && !skip.some((skipped) => isWithin(path, skipped))) pending.push(path);
    }
  }
  return found;
}

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
