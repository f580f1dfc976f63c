/**
 * Ignore overlays: files a mounted host directory holds but the server must not see.
 *
 * Patterns (gitignore syntax, matched by the `ignore` package: comments, blank lines, `!`
 * negation, trailing `/` for directories only, `**`) come from two places only:
 *   - the global file `<configDir>/mcpmgrignore`, loaded when `--ignore-globally` (default true);
 *   - the `.mcpmgrignore` at the root of each mounted directory. A server with a writable
 *     mount could have replaced it, so it is read as a regular file only: never through a
 *     symbolic link (a link to a host file, a FIFO or /dev/zero), at most 1 MiB; anything
 *     else stops the start with UNSAFE_MOUNT (readLocalIgnoreFile).
 * Nested `.mcpmgrignore` files in subdirectories are NOT read. A single-file mount is checked
 * against the global patterns only (by its file name).
 *
 * Hiding is by overlay, applied by the runtimes: a matching directory gets an empty tmpfs
 * over its container path, a matching file gets the empty read-only file of
 * `emptyOverlayFile()` bind-mounted over it. A hidden directory is not descended into (it is
 * hidden whole). Symlinks are never followed; a matching symlink is hidden as what it points to.
 * Matching is case-insensitive (the package's default): on a case-sensitive disk that hides
 * more, never less. The walk is capped: past `maxEntries` it throws rather than leave the
 * rest of the tree visible. A directory, or a matching entry, whose name is not UTF-8 cannot be
 * named to be read or covered: it stops the start (UNSAFE_MOUNT) rather than stay visible. A mount with no pattern at all (no global ones, and no
 * `.mcpmgrignore` or one of comments and blank lines only) is not walked: nothing could match.
 */
import { constants } from "node:fs";
import { chmod, lstat, open, readdir, readFile, stat } from "node:fs/promises";
import { join, posix } from "node:path";
import ignore, { type Ignore } from "ignore";
import { errorMessage, McpmgrError } from "../errors.ts";
import { errnoCode, stateIoError, writeFileAtomic } from "../state/atomic-file.ts";

export interface MountForOverlay {
  /** Absolute path on the host. */
  readonly hostPath: string;
  readonly containerPath: string;
}

export interface Overlay {
  readonly kind: "dir" | "file";
  readonly containerPath: string;
  readonly hostPath: string;
  /** The pattern that matched, as written in the ignore file. */
  readonly pattern: string;
  /** The ignore file the pattern came from: a `.mcpmgrignore` or the global file. */
  readonly source: string;
}

export interface ResolveOverlaysOptions {
  readonly globalPatterns: readonly string[];
  /** Shown as the source of global patterns (default "the global ignore file"). */
  readonly globalSource?: string;
  /** Most directory entries looked at, over all mounts (default 100 000). */
  readonly maxEntries?: number;
  /** `.mcpmgrignore` texts already read (readLocalIgnoreFile) by mount host path: not read again. */
  readonly localIgnoreFiles?: ReadonlyMap<string, string | undefined>;
}

export const LOCAL_IGNORE_FILE = ".mcpmgrignore";
export const GLOBAL_IGNORE_FILE = "mcpmgrignore";
const DEFAULT_MAX_ENTRIES = 100_000;
/** Largest `.mcpmgrignore` read: patterns, not data. */
const MAX_IGNORE_FILE_BYTES = 1024 * 1024;

/**
 * The text of `<dir>/.mcpmgrignore`, undefined when there is none. Opened without following
 * a symbolic link and without blocking (a FIFO would hang the start), and only a regular file
 * of at most MAX_IGNORE_FILE_BYTES is read, from the descriptor that was checked.
 */
export async function readLocalIgnoreFile(dir: string): Promise<string | undefined> {
  const path = join(dir, LOCAL_IGNORE_FILE);
  const refuse = (what: string) =>
    new McpmgrError("UNSAFE_MOUNT", `${path} ${what}; mcpmgr reads ignore patterns only from a regular file`, {
      hint: `replace it with a regular file of patterns, or delete it (a server that can write to ${dir} may have put it there to reach other host files)`,
    });
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    const code = errnoCode(err);
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    if (code === "ELOOP") throw refuse("is a symbolic link");
    throw new McpmgrError("UNSAFE_MOUNT", `cannot read ${path}: ${errorMessage(err)}`, {
      hint: "make it a readable regular file, or delete it",
      cause: err,
    });
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw refuse("is not a regular file");
    if (info.size > MAX_IGNORE_FILE_BYTES) throw refuse(`is larger than ${MAX_IGNORE_FILE_BYTES} bytes`);
    const buffer = Buffer.alloc(info.size);
    const { bytesRead } = await handle.read(buffer, 0, info.size, 0);
    return buffer.subarray(0, bytesRead).toString("utf8");
  } finally {
    await handle.close();
  }
}

/** The patterns of `<configDir>/mcpmgrignore` (blank lines and comments dropped); [] when absent. */
export async function loadGlobalIgnorePatterns(configDir: string): Promise<string[]> {
  const path = join(configDir, GLOBAL_IGNORE_FILE);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return [];
    // The user asked for these patterns: carrying on without them would show what they hide.
    throw new McpmgrError("INVALID_OPTION", `cannot read the global ignore file ${path}: ${errorMessage(err)}`, {
      hint: "make the file readable, or pass --ignore-globally=false to run without it",
      cause: err,
    });
  }
  return _splitLines(text).filter((line) => line.trim() !== "" && !line.startsWith("#"));
}

/** Every overlay the mounts need, sorted by container path, one per container path. */
export async function resolveOverlays(
  mounts: readonly MountForOverlay[],
  options: ResolveOverlaysOptions,
): Promise<Overlay[]> {
  const globalSource = options.globalSource ?? "the global ignore file";
  const budget = { left: options.maxEntries ?? DEFAULT_MAX_ENTRIES, max: options.maxEntries ?? DEFAULT_MAX_ENTRIES };
  const found: Overlay[] = [];
  for (const mount of mounts) {
    const info = await stat(mount.hostPath).catch(() => undefined);
    if (info === undefined) continue; // not there (yet): nothing in it to hide
    const rules = ignore().add(options.globalPatterns.map((pattern) => ({ pattern, mark: globalSource })));
    if (!info.isDirectory()) {
      const name = posix.basename(mount.hostPath.replaceAll("\\", "/"));
      const rule = _match(rules, name);
      if (rule) found.push({ kind: "file", containerPath: mount.containerPath, hostPath: mount.hostPath, ...rule });
      continue;
    }
    const localSource = join(mount.hostPath, LOCAL_IGNORE_FILE);
    const local = options.localIgnoreFiles?.has(mount.hostPath)
      ? (options.localIgnoreFiles.get(mount.hostPath) ?? "")
      : ((await readLocalIgnoreFile(mount.hostPath)) ?? "");
    const localPatterns = _splitLines(local);
    // Without a single pattern nothing can match, so the tree is not walked: in a big working
    // directory (node_modules) that walk is tens of thousands of strings and promises, left in
    // the long-lived supervisor's allocator as pinned pages on a loaded machine (bench/README.md).
    if (!_hasPattern(options.globalPatterns) && !_hasPattern(localPatterns)) continue;
    rules.add(localPatterns.map((pattern) => ({ pattern, mark: localSource })));
    await _walk(mount, rules, budget, found);
  }
  found.sort((a, b) => (a.containerPath < b.containerPath ? -1 : a.containerPath > b.containerPath ? 1 : 0));
  return found.filter((overlay, i) => i === 0 || found[i - 1]?.containerPath !== overlay.containerPath);
}

/** One line per overlay, e.g. "/data/.env (file) hidden by .env in /home/u/proj/.mcpmgrignore". */
export function describeOverlays(overlays: readonly Overlay[]): string[] {
  return overlays.map((o) => `${o.containerPath} (${o.kind}) hidden by ${o.pattern} in ${o.source}`);
}

/**
 * `<dataDir>/overlay-empty`: an empty, read-only (0444) file the runtimes bind over hidden
 * files. Created atomically the first time; later calls return the existing file.
 */
export async function emptyOverlayFile(dataDir: string): Promise<string> {
  const path = join(dataDir, "overlay-empty");
  const info = await lstat(path).catch(() => undefined);
  if (info?.isFile() && info.size === 0 && (info.mode & 0o777) === 0o444) return path;
  await writeFileAtomic(path, "", { mode: 0o444 });
  // The umask may have narrowed the mode at creation; containers running as another user must read it.
  await chmod(path, 0o444).catch((err: unknown) => {
    throw stateIoError("set the mode of", path, err);
  });
  return path;
}

interface _Budget {
  left: number;
  readonly max: number;
}

async function _walk(mount: MountForOverlay, rules: Ignore, budget: _Budget, found: Overlay[]): Promise<void> {
  const pending: string[] = [""]; // relative POSIX paths of directories still to read
  for (let rel = pending.pop(); rel !== undefined; rel = pending.pop()) {
    const dir = rel === "" ? mount.hostPath : join(mount.hostPath, rel);
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => undefined);
    if (entries === undefined) continue; // unreadable: skip it
    budget.left -= entries.length;
    if (budget.left < 0) {
      throw new McpmgrError(
        "INVALID_OPTION",
        `the mounted directories hold more than ${budget.max} entries to check against the ignore patterns (stopped in ${mount.hostPath})`,
        {
          hint: `hide the big folders whole (for example node_modules/ or .git/) in ${join(mount.hostPath, LOCAL_IGNORE_FILE)}, or mount a smaller directory`,
        },
      );
    }
    for (const entry of entries) {
      const childRel = rel === "" ? entry.name : `${rel}/${entry.name}`;
      const hostPath = join(mount.hostPath, childRel);
      const isDir = entry.isDirectory();
      const rule = _match(rules, isDir ? `${childRel}/` : childRel);
      // A name that is not UTF-8 reads back with U+FFFD in it: the path built from it names no
      // file, so a directory would be skipped unread and an overlay would land beside the file.
      if ((isDir || rule) && entry.name.includes("\uFFFD") && !(await _exists(hostPath))) throw _unnamable(hostPath);
      if (!rule) {
        if (isDir) pending.push(childRel);
        continue;
      }
      const kind = isDir || (entry.isSymbolicLink() && (await _pointsToDir(hostPath))) ? "dir" : "file";
      found.push({ kind, containerPath: posix.join(mount.containerPath, childRel), hostPath, ...rule });
    }
  }
}

function _match(rules: Ignore, path: string): { pattern: string; source: string } | undefined {
  const result = rules.test(path);
  if (!result.ignored || result.rule === undefined) return undefined;
  return { pattern: result.rule.pattern, source: result.rule.mark ?? "" };
}

async function _exists(path: string): Promise<boolean> {
  return (await lstat(path).catch(() => undefined)) !== undefined;
}

function _unnamable(path: string): McpmgrError {
  return new McpmgrError(
    "UNSAFE_MOUNT",
    `${path} (shown with U+FFFD) has a name that is not valid UTF-8: mcpmgr can neither check what is in it nor hide it`,
    { hint: "rename it, or hide its parent directory whole with a pattern in the .mcpmgrignore" },
  );
}

async function _pointsToDir(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isDirectory() ?? false;
}

/** Whether resolveOverlays has anything to walk for: a global pattern, or one in a `.mcpmgrignore` text. */
export function hasAnyPattern(
  globalPatterns: readonly string[],
  localIgnoreFiles: ReadonlyMap<string, string | undefined>,
): boolean {
  return (
    _hasPattern(globalPatterns) ||
    [...localIgnoreFiles.values()].some((t) => t !== undefined && _hasPattern(_splitLines(t)))
  );
}

/** Whether any line is a pattern (the ignore package skips blank lines and comments). */
function _hasPattern(lines: readonly string[]): boolean {
  return lines.some((line) => line.trim() !== "" && !line.startsWith("#"));
}

function _splitLines(text: string): string[] {
  return text.replace(/^\uFEFF/, "").split(/\r?\n/);
}
