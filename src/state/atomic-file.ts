/**
 * Crash-safe files. A reader (another mcpmgr, `list` while `run` writes) sees either the
 * old file or the new one, never half of either: we write a temporary file next to the
 * target, fsync it, and rename it over the target (rename is atomic within one
 * filesystem, which is why the temporary file lives in the same folder, not in /tmp).
 *
 * Reading goes through a valibot schema so a hand-edited or truncated file fails with the
 * file name and the field path, not with `undefined is not an object` three calls later.
 */
import { constants, existsSync, statSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import * as v from "valibot";
import { FileTooLarge, readCappedFile, SAVE_AS_UTF8, utf16Problem } from "../bounded-file.ts";
import { errorMessage, McpmgrError } from "../errors.ts";
import { isProcessAlive } from "./process-start.ts";

/**
 * node:fs/promises (with node:events and Node's validators) once something is written, not
 * for every command that imports this module: `list` only reads (bench `cli-startup`).
 */
const fsp = () => import("node:fs/promises");

export interface WriteOptions {
  /** Permission bits of the file (default 0o600: state can name hosts, ports and secret references). */
  readonly mode?: number;
  /** Permission bits of parent folders created on the way (default 0o700). */
  readonly dirMode?: number;
  /**
   * Who the file belongs to, set on the temporary file before it takes the real name (root
   * rewriting a user's file must not hand it to root). Only root may give a file away.
   */
  readonly owner?: { readonly uid: number; readonly gid: number };
  /**
   * A group to keep the file in where the process may (a user may give their file to any group
   * they are a member of): the new file is otherwise in the user's primary group, and the people
   * the old one was shared with through its group would lose it. Where it may not, the write goes on.
   */
  readonly group?: number;
  /**
   * Asked once the new text is on disk, just before the rename: false leaves the target as it
   * is (the temporary file goes) and the write returns false. An AI client's file uses it to
   * check that its own program did not write it since it was read.
   */
  readonly beforeRename?: () => Promise<boolean>;
  /**
   * Root only: the real folder (checked by the caller, an AI client's file in the home) the new
   * file must really be made in. The user owns the folders on the way and may swap one for a link
   * meanwhile (~/.cursor for a link to /root/.cursor): the write is refused instead of putting a
   * file of the user's into a folder of root's.
   */
  readonly realFolder?: string;
}

/** Root's write refused because the new file was not made in `realFolder`: `folder` is where it was. */
export class FolderSwapped extends Error {
  readonly folder: string;
  constructor(folder: string) {
    super(`a folder on its path was replaced by a link to ${folder} meanwhile`);
    this.folder = folder;
  }
}

export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: WriteOptions = {},
): Promise<boolean> {
  const mode = options.mode ?? 0o600;
  const dir = dirname(path);
  await ensureDir(dir, options.dirMode);
  // Leading dot and random suffix: never mistaken for a real file, never shared by two writers.
  const temp = join(
    dir,
    `.${basename(path)}.${process.pid}.${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex")}.tmp`,
  );
  try {
    // "wx": refuse to follow a symlink or reuse a file someone planted at the temporary name.
    const handle = await (await fsp()).open(temp, "wx", mode);
    try {
      if (options.realFolder !== undefined && process.getuid?.() === 0) {
        const real = await descriptorPath(handle);
        if (real !== undefined && dirname(real) !== options.realFolder) {
          await (await fsp()).unlink(real).catch(() => {});
          throw new FolderSwapped(dirname(real));
        }
      }
      const owner = options.owner ?? (await ownerAsRootOf(handle, path));
      if (owner !== undefined) await handle.chown(owner.uid, owner.gid);
      else if (options.group !== undefined) await handle.chown(-1, options.group).catch(() => {});
      // Through the handle, before the rename: the exact bits (open's mode went through the
      // umask), and no chmod by path afterwards that a link swapped in meanwhile would redirect.
      await handle.chmod(mode);
      await handle.writeFile(data);
      // Without fsync a crash after rename can leave an empty file under the real name
      // (ext4 delayed allocation): the data must be on disk before the name points at it.
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (options.beforeRename !== undefined && !(await options.beforeRename())) {
      await (await fsp()).unlink(temp).catch(() => {});
      return false;
    }
    await _renameWithRetry(temp, path);
  } catch (err) {
    await (await fsp()).unlink(temp).catch(() => {});
    throw stateIoError("write", path, err);
  }
  await _syncDir(dir);
  return true;
}

/**
 * Temporary files of writeFileAtomic for `path` that a killed process left beside it (SIGKILL, a
 * power cut between the write and the rename): each a whole copy of the file, an AI client's 25 MB
 * ~/.claude.json with its tokens among them, kept for good in the user's folder. Removed when their
 * writer is gone; the caller holds the lock its writers take, so no live mcpmgr is mid-write there.
 */
export async function removeLeftTemps(path: string): Promise<void> {
  const fs = await fsp();
  const prefix = `.${basename(path)}.`;
  const names = await fs.readdir(dirname(path)).catch(() => [] as string[]);
  for (const name of names) {
    const pid = name.startsWith(prefix) ? /^(\d+)\.[0-9a-f]{12}\.tmp$/.exec(name.slice(prefix.length))?.[1] : undefined;
    if (pid === undefined || Number(pid) === process.pid || isProcessAlive(Number(pid))) continue;
    await fs.unlink(join(dirname(path), name)).catch(() => {});
  }
}

export async function writeJsonFile(path: string, value: unknown, options: WriteOptions = {}): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`, options);
}

export interface ReadOptions {
  /** What the user should do when the file is corrupt; the default names the file. */
  readonly hint?: string;
  /**
   * Refuse a key given twice in one object (JSON.parse keeps the last): for a file a user edits
   * (`--from-config`), where a second `runOptions` would replace the first without a word.
   */
  readonly refuseDuplicateKeys?: boolean;
}

/**
 * Reads and validates a JSON file. Missing file → undefined (callers decide whether that is
 * "not created yet" or an error). Unparseable or invalid → McpmgrError STATE_CORRUPT.
 */
export async function readJsonFile<S extends v.GenericSchema>(
  path: string,
  schema: S,
  options: ReadOptions = {},
): Promise<v.InferOutput<S> | undefined> {
  let text: string;
  try {
    // A state file is a few hundred bytes; a file a user names (--from-config) may be anything.
    text = readCappedFile(path);
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return undefined;
    if (err instanceof FileTooLarge)
      throw new McpmgrError("STATE_CORRUPT", `${path}: ${err.message}`, {
        hint: options.hint ?? `check ${path}`,
      });
    throw stateIoError("read", path, err);
  }
  const utf16 = utf16Problem(text);
  if (utf16 !== undefined) throw new McpmgrError("STATE_CORRUPT", `${path}: ${utf16}`, { hint: SAVE_AS_UTF8 });
  // A file a user edited (an export opened in Windows Notepad) may start with a byte order mark, which
  // JSON.parse calls an invalid symbol at line 1, column 1: an invisible reason to refuse it.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const hint = options.hint ?? `fix ${path} by hand, or delete it if its contents are not needed`;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    // Not JSON.parse's message: it quotes the token it stopped at (a secret pasted unquoted, in an
    // edited --from-config file); jsonc-parser's says where and why.
    const detail = text.trim() === "" ? "the file is empty" : (problemIn(text) ?? errorMessage(err));
    throw new McpmgrError("STATE_CORRUPT", `${path} is not valid JSON: ${detail}`, { hint, cause: err });
  }
  if (options.refuseDuplicateKeys) {
    const { duplicateKeyText, jsonDuplicateKey } =
      require("../config/file-syntax.ts") as typeof import("../config/file-syntax.ts");
    const duplicate = jsonDuplicateKey(text);
    if (duplicate !== undefined)
      throw new McpmgrError("STATE_CORRUPT", `${path}: ${duplicateKeyText(duplicate)}`, { hint: "give each key once" });
  }
  refuseNewerFile(path, json);
  const result = v.safeParse(schema, json);
  if (!result.success) {
    throw new McpmgrError("STATE_CORRUPT", `${path} is not a valid mcpmgr file: ${describeIssues(result.issues)}`, {
      hint,
    });
  }
  return result.output;
}

/**
 * The `schema_version` every state file (and an exported workload) has now. A newer mcpmgr that
 * changes a file incompatibly writes a higher one; an older mcpmgr (a downgrade, an export shared
 * with someone who has not upgraded) refuses such a file as newer, leaving it as it is, instead of
 * calling it broken and advising to delete it.
 */
export const STATE_SCHEMA_VERSION = 1;

function refuseNewerFile(path: string, json: unknown): void {
  const version = typeof json === "object" && json !== null ? (json as { schema_version?: unknown }).schema_version : 1;
  if (typeof version !== "number" || !(version > STATE_SCHEMA_VERSION)) return;
  throw new McpmgrError(
    "STATE_CORRUPT",
    `${path} was written by a newer mcpmgr (schema_version ${version}; this one reads ${STATE_SCHEMA_VERSION})`,
    { hint: "use the newer mcpmgr that wrote it (see docs/upgrading.md); the file was left as it is" },
  );
}

/** Where and why JSON text does not parse (loaded only then: `list` reads state files on every run). */
function problemIn(text: string): string | undefined {
  return (require("../config/file-syntax.ts") as typeof import("../config/file-syntax.ts")).jsonProblem(text);
}

/** The issue's message with the value it quotes left out (loaded only on a failure, as above). */
function withoutValue(issue: v.BaseIssue<unknown>): string {
  return (require("../config/values.ts") as typeof import("../config/values.ts")).issueWithoutValue(issue);
}

/** "proxyPort: must be a port number (and 2 more problems)", per ARCHITECTURE.md §3.6. */
export function describeIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  const [first] = issues;
  if (first === undefined) return "is not valid";
  const at = v.getDotPath(first);
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more problem${issues.length > 2 ? "s" : ""})` : "";
  const field = first.path?.at(-1)?.key;
  // valibot says a missing field is an "Invalid key: Expected "proxyPort" but received undefined".
  if (first.kind === "schema" && first.received === "undefined" && first.expected === JSON.stringify(field)) {
    const parent = first.path
      ?.slice(0, -1)
      .map((item) => String(item.key))
      .join(".");
    return `${parent ? `${parent}: ` : ""}the field ${first.expected} is missing${more}`;
  }
  return `${at === null || at === "" ? "" : `${at}: `}${withoutValue(first)}${more}`;
}

/**
 * mkdir -p with private permissions; mcpmgr folders hold nothing other users should read. Root
 * gives each folder it makes to the owner of the folder it really is in (read through the
 * descriptor of what was made, as ownerAsRootOf does for files).
 */
export async function ensureDir(dir: string, mode = 0o700): Promise<void> {
  const fs = await fsp();
  try {
    if (process.getuid?.() !== 0) {
      await fs.mkdir(dir, { recursive: true, mode });
      return;
    }
    const missing: string[] = [];
    for (let folder = dir; !existsSync(folder) && folder !== dirname(folder); folder = dirname(folder)) {
      missing.unshift(folder);
    }
    for (const folder of missing) {
      await fs.mkdir(folder, { mode }).catch((err) => {
        if (errnoCode(err) !== "EEXIST") throw err;
      });
      // Through a descriptor opened without following links: a link swapped in is not given away.
      const handle = await fs.open(folder, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      try {
        // The owner of the folder it really is in (`..` of the descriptor): a folder above it
        // swapped for a link after the mkdir made `folder` name another one (/usr/share for
        // ~/.local/share, ~/.local a link to /usr), which its path's parent, the user's, gave away.
        const owner = await ownerOf(`/proc/self/fd/${handle.fd}/..`);
        if (owner !== undefined) await handle.chown(owner.uid, owner.gid);
      } finally {
        await handle.close();
      }
    }
  } catch (err) {
    throw stateIoError("create the folder", dir, err);
  }
}

/**
 * Whom root gives a new file (open at `handle`, to be renamed to `path`): the owner of the file it
 * replaces, else of the folder it is made in, when that is the HOME's owner; undefined otherwise
 * (root's own, another user's) and when not root. Root run with a user's
 * HOME (`sudo -E`, documented for configuring that user's AI clients) wrote mcpmgr's state there
 * as root's, 0600 in folders of 0700 (~/.local among them): the user's own mcpmgr could no
 * longer read it (EACCES at every command), nor other programs use ~/.local.
 */
export async function ownerAsRootOf(
  handle: FileHandle,
  path: string,
): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const fs = await fsp();
  // Read where the new file really is, never through `path`: the user owns the folders on it and
  // may swap one for a link between a look at the path and the open (a file root made in /etc
  // was given to them). No /proc: root's, as it was.
  const real = await descriptorPath(handle);
  if (real === undefined) return undefined;
  const folder = dirname(real);
  const existing = await fs.lstat(join(folder, basename(path))).catch(() => undefined);
  return existing?.isFile() ? owned(existing) : ownerOf(folder);
}

/** Where an open file really is (/proc/self/fd), undefined where that cannot be known (no /proc). */
export async function descriptorPath(handle: FileHandle): Promise<string | undefined> {
  const real = await (await fsp()).readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
  return real?.startsWith("/") ? real : undefined;
}

/** The owner of `path` (links followed) unless it is root's own (root:root): undefined then, and when it cannot be read. */
async function ownerOf(path: string): Promise<{ uid: number; gid: number } | undefined> {
  const info = await (await fsp()).stat(path).catch(() => undefined);
  return info === undefined ? undefined : owned(info);
}

/**
 * Given away only to the owner of the HOME root runs with (the user whose files root was asked to
 * configure): root with its own HOME (`su` keeps the user's XDG_RUNTIME_DIR, where root's pid files
 * and sockets then go) or a folder of a third user keep root's files root's, as before.
 */
function owned(info: { uid: number; gid: number }): { uid: number; gid: number } | undefined {
  if (info.uid === 0 || info.uid !== homeOwner()) return undefined;
  return { uid: info.uid, gid: info.gid };
}

function homeOwner(): number | undefined {
  const home = process.env.HOME;
  if (home === undefined || home === "") return undefined;
  try {
    return statSync(home).uid;
  } catch {
    return undefined;
  }
}

/** The `code` of a Node system error ("ENOENT"), if it is one. */
export function errnoCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** Wraps a filesystem failure as STATE_IO with a hint that fits its errno. */
export function stateIoError(verb: string, path: string, err: unknown): McpmgrError {
  if (err instanceof McpmgrError) return err;
  const code = errnoCode(err);
  const hint =
    code === "EACCES" || code === "EPERM"
      ? `check the permissions of ${dirname(path)}, or point MCPMGR_HOME at a folder you own`
      : code === "ENOSPC" || code === "EDQUOT"
        ? "the disk is full: free some space and try again"
        : code === "EROFS"
          ? "the filesystem is read-only; point MCPMGR_HOME at a writable folder"
          : "point MCPMGR_HOME at a writable folder if this one cannot be used";
  return new McpmgrError("STATE_IO", `cannot ${verb} ${path}: ${errorMessage(err)}`, {
    hint,
    cause: err,
  });
}

/**
 * On Windows a rename over a file that another process (an antivirus scanner, a concurrent
 * `list`) has open fails with EPERM/EACCES/EBUSY for a moment; retrying briefly is what
 * npm's write-file-atomic and graceful-fs do. Elsewhere rename either works or fails for good.
 */
async function _renameWithRetry(from: string, to: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await (await fsp()).rename(from, to);
      return;
    } catch (err) {
      const transient = process.platform === "win32" && ["EPERM", "EACCES", "EBUSY"].includes(errnoCode(err) ?? "");
      if (!transient || attempt >= 10) throw err;
      await Bun.sleep(10 * (attempt + 1));
    }
  }
}

/** fsync the folder so the rename itself survives a power cut. Windows cannot open folders; skip there. */
async function _syncDir(dir: string): Promise<void> {
  if (process.platform === "win32") return;
  try {
    const handle = await (await fsp()).open(dir, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Some filesystems (network mounts) refuse fsync on folders; the data is already safe there.
  }
}
