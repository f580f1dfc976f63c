/**
 * One safe change to an AI client's configuration file:
 *
 *   lock     `<file>.mcpmgr-lock` (src/state/lock.ts) for the read-modify-write, so two mcpmgr
 *            processes, even with different MCPMGR_HOMEs, never lose each other's entries.
 *   read     through a symlink to the real file (dotfile managers link these files; replacing
 *            the link by a copy would silently fork the user's configuration).
 *   edit     by the format's editor; a file that does not parse is left alone, with one warning.
 *   backup   the file as it was before mcpmgr first changed it, once, whole (backup.ts).
 *   write    only when the text changed, atomically (temp file + rename; temp files a killed
 *            mcpmgr left go), keeping the original's permission bits and, as root (sudo), its
 *            owner and group; a new file under the user's home (and folders made for it) belongs
 *            to the home's owner. As root, a file whose real path leaves the home, or that is not
 *            the home owner's, is refused. In place instead: a hard-linked file (a rename would
 *            part its names), and another user's when not root (it would become this user's);
 *            one whose mode does not let this user write it is left alone, with one warning.
 *            An in-place write is journaled first; one a killed mcpmgr cut short is repaired
 *            at the next edit (in-place-write.ts).
 *
 * Clients that rewrite their own file at any moment (Claude Code does, for ~/.claude.json)
 * do not take our lock, and many write in place (truncate, then write). The file is read only
 * once its program is done writing it, and renamed over only if it is still the version read
 * (settled-read.ts); a file that keeps changing is left alone with a warning. A change a client
 * makes between that last check and the rename itself can still be lost, as with their own CLIs.
 *   read-only  a file without its owner's write bit is left alone, with one warning: that is how
 *            users tell programs to keep out of a file.
 */
import { constants, existsSync, statSync } from "node:fs";
import { access, lstat, mkdir, open, readlink, realpath, stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import { errorMessage, isMcpmgrError } from "../errors.ts";
import { errnoCode, FolderSwapped, removeLeftTemps, writeFileAtomic } from "../state/atomic-file.ts";
import { withLock } from "../state/lock.ts";
import { backupOnce, backupPath } from "./backup.ts";
import { ConfigParseError, type FormatEditor, loadEditor } from "./formats/editor.ts";
import { repairCutShortWrite, writeInPlace } from "./in-place-write.ts";
import {
  currentStamp,
  readSettled,
  SETTLE_LIMIT_MS,
  sameStamp,
  UnreadableText,
  UnsettledFile,
} from "./settled-read.ts";
import type { ClientContext, ClientDefinition } from "./types.ts";

/** Raised inside an edit to leave the file untouched, with the reason as the warning. */
export class SkipEdit extends Error {
  override readonly name = "SkipEdit";
}

export type EditResult =
  | { readonly changed: boolean; readonly skipped?: undefined }
  /** `broken`: the file cannot be read as its format; warned about once per state of it (broken-file-notice.ts). */
  | { readonly skipped: string; readonly broken?: boolean };

export interface EditOptions {
  /** Whether a missing file may be created (adding an entry) or means there is nothing to do (removing one). */
  readonly create: boolean;
}

const BOM = "\uFEFF";

/** A new file is private by default; an existing one keeps whatever permissions it has. */
const NEW_FILE_MODE = 0o600;

export async function editClientFile(
  ctx: ClientContext,
  client: ClientDefinition,
  path: string,
  options: EditOptions,
  edit: (text: string, editor: FormatEditor) => string,
): Promise<EditResult> {
  const refusal = client.refuse?.(ctx, existsSync);
  if (refusal !== undefined) return { skipped: refusal };
  const target = await realTarget(path);
  if (!options.create && !existsSync(target)) return { changed: false };
  try {
    // Root: the real path checked, which the file read and written must really be at (the user
    // owns the folders on the way and may swap one for a link meanwhile).
    const checked = process.getuid?.() === 0 ? await realOfMissing(target) : undefined;
    const outside = checked === undefined ? undefined : await rootRefusal(ctx, checked);
    if (outside !== undefined) return { skipped: outside };
    await makeFolders(dirname(target), await ownerFor(ctx, target, undefined));
    return await withLock(`${target}.mcpmgr-lock`, async () => {
      await removeLeftTemps(target);
      await repairCutShortWrite(ctx, client, target, checked);
      const editor = await loadEditor(client.format);
      const deadline = Date.now() + SETTLE_LIMIT_MS;
      let told = false;
      const onWait = (why: string) => {
        if (!told) ctx.log.info(`${client.displayName} (${path}): ${why}; mcpmgr waits until it is done`);
        told = true;
      };
      for (;;) {
        const read = await readSettled(target, { deadline, onWait });
        if (read === undefined && !options.create) return { changed: false };
        if (checked !== undefined && read?.real !== undefined && read.real !== checked)
          throw new SkipEdit(pathSwapped(read.real, "read"));
        const original = read?.text;
        // A byte order mark (Windows editors write one) is no part of the format: set aside, put back.
        const bom = original?.startsWith(BOM) ? BOM : "";
        const before = original?.slice(bom.length) ?? client.newFileText ?? "";
        const edited = edit(before, editor);
        if (edited === before) return { changed: false };
        if (read !== undefined && (read.mode & 0o200) === 0) {
          throw new SkipEdit(
            `it is read-only (mode ${(read.mode & 0o777).toString(8).padStart(4, "0")}); mcpmgr left it unchanged (make it writable, chmod u+w, to let mcpmgr keep its entries there)`,
          );
        }
        const mode = read === undefined ? NEW_FILE_MODE : read.mode;
        const owner = await ownerFor(ctx, target, read);
        const foreign = read !== undefined && owner === undefined && othersFile(read.uid);
        if (foreign) await refuseUnwritable(target, read);
        await backupOnce(ctx, client, path, original);
        // A file with other names (a dotfiles folder of hard links) is written in place: a rename
        // would part them; so is another user's file that its mode lets this one write (a shared
        // file): only root can give a new file back to its owner. Otherwise the bits are set on the
        // temporary file's handle (exactly, past the umask): a chmod by path after the rename would
        // follow a link the user swapped in meanwhile. Either way the file must still be the
        // version read: a client that wrote it meanwhile is read again.
        const written =
          read !== undefined && (read.links > 1 || foreign)
            ? await writeInPlace(ctx, client, target, bom + edited, read)
            : await writeFileAtomic(target, bom + edited, {
                mode,
                ...(owner ? { owner } : {}),
                // Not root: the file stays in its group where the user may keep it there (a shared one).
                ...(!owner && read !== undefined && read.gid !== process.getegid?.() ? { group: read.gid } : {}),
                beforeRename: async () => sameStamp(read?.stamp, await currentStamp(target)),
                ...(checked !== undefined ? { realFolder: dirname(checked) } : {}),
              });
        if (written) return { changed: true };
        if (Date.now() >= deadline) {
          throw new SkipEdit(
            `it kept changing for more than ${SETTLE_LIMIT_MS / 1000} s; mcpmgr left it unchanged (run the command again once it is done)`,
          );
        }
        onWait("it changed while mcpmgr edited it");
      }
    });
  } catch (err) {
    if (err instanceof ConfigParseError) {
      return {
        skipped: `${err.message}; mcpmgr left it unchanged (once it is fixed, the next change is written)`,
        broken: true,
      };
    }
    if (err instanceof UnreadableText) return { skipped: err.message, broken: true };
    if (err instanceof SkipEdit || err instanceof UnsettledFile) return { skipped: err.message };
    // Seen at the write rather than the read: said as the read says it.
    if (isMcpmgrError(err) && err.cause instanceof FolderSwapped)
      return { skipped: pathSwapped(join(err.cause.folder, basename(target)), "wrote") };
    // A file built to exhaust a parser's stack: refused like any broken file, never the end of the whole update.
    if (err instanceof RangeError) {
      return { skipped: `it cannot be read (${err.message}); mcpmgr left it unchanged`, broken: true };
    }
    // Unreadable, unwritable, locked for too long: a warning, never a failed `run`.
    if (isMcpmgrError(err) || errnoCode(err) !== undefined) return { skipped: ioFailure(path, target, err) };
    throw err;
  }
}

/**
 * Why the file could not be updated, in the user's terms where the cause is theirs to fix: a
 * folder that cannot be written (the lock and the new text go beside the file), as when the file
 * is a link into a store another tool manages (Nix's home-manager), or a loop of symlinks.
 */
function ioFailure(path: string, target: string, err: unknown): string {
  const code = isMcpmgrError(err) ? errnoCode(err.cause) : errnoCode(err);
  const linked = target !== path ? `it links to ${target}, and ` : "";
  if (code === "EACCES" || code === "EPERM" || code === "EROFS") {
    if (isMcpmgrError(err) && err.message.startsWith("cannot create the lock file")) {
      return `${linked}its folder ${dirname(target)} cannot be written (${code}), where mcpmgr writes the new version before it replaces the file; mcpmgr left it unchanged (make that folder writable, or add the server where the file is managed, e.g. your dotfiles or home-manager)`;
    }
    // Its own open for reading (settled-read.ts): a mode without the read bit for this user (chmod 200).
    if ((err as { syscall?: unknown }).syscall === "open" && (err as { path?: unknown }).path === target) {
      return `${linked}it cannot be read by you (${code}); mcpmgr left it unchanged (let yourself read and write it, e.g. chmod u+rw on it)`;
    }
  }
  if (code === "ELOOP") return `its symlinks form a loop (${path} leads back to itself); mcpmgr left it unchanged`;
  if (code === "EEXIST" || code === "ENOTDIR") {
    const blocker = notAFolder(dirname(target));
    if (blocker !== undefined) {
      return `${blocker} is a file where a folder on the way to it belongs; mcpmgr left it unchanged (move that file away to let mcpmgr write there)`;
    }
  }
  return `cannot update it: ${errorMessage(err)}`;
}

/**
 * Root checked the file's real path (rootRefusal), but the user owns the folders on it and may
 * swap one for a link before the read: root then read and edited a file of its own (its text
 * saved in the user's backup, the user's to read); or before the write (writeFileAtomic's
 * realFolder): root made a file of the user's in a folder of its own. Said alike either way.
 */
function pathSwapped(real: string, when: "read" | "wrote"): string {
  return `a folder on its path was replaced by a link while mcpmgr ${when} it (it led to ${real}); mcpmgr runs as root and left it unchanged`;
}

/** Whether a file of `uid` is another user's to this process (root's own rewrites keep owners: ownerFor). */
function othersFile(uid: number): boolean {
  const self = process.geteuid?.();
  return self !== undefined && self !== 0 && uid !== self;
}

/**
 * Another user's file (root's, left by a `sudo`; a colleague's) that its mode does not let this
 * user write: its folder being the user's would let a rename replace it anyway, taking it over
 * and going round the permissions its owner set. Left alone, as a read-only file is.
 */
async function refuseUnwritable(target: string, read: { uid: number; mode: number }): Promise<void> {
  const writable = await access(target, constants.W_OK)
    .then(() => true)
    .catch(() => false);
  if (writable) return;
  const who = read.uid === 0 ? "root" : `another user (uid ${read.uid})`;
  throw new SkipEdit(
    `it belongs to ${who} and its mode (${(read.mode & 0o777).toString(8).padStart(4, "0")}) does not let you write it; mcpmgr left it unchanged (make it yours, e.g. sudo chown "$USER" on it, to let mcpmgr keep its entries there)`,
  );
}

/** The first path on the way to `dir` that exists and is not a folder, if any. */
function notAFolder(dir: string): string | undefined {
  const parent = dirname(dir);
  const above = parent === dir ? undefined : notAFolder(parent);
  if (above !== undefined) return above;
  return existsSync(dir) && !statSync(dir).isDirectory() ? dir : undefined;
}

interface Owner {
  readonly uid: number;
  readonly gid: number;
}

/**
 * Whom a rewritten file is given back to: its own owner and group; a new file under the home,
 * the home's owner. Only for root: anyone else can only write files of their own, and a file
 * root writes elsewhere (no home above it) stays root's.
 */
async function ownerFor(ctx: ClientContext, target: string, existing: Owner | undefined): Promise<Owner | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  if (existing !== undefined) return { uid: existing.uid, gid: existing.gid };
  // The target is a real path (symlinks resolved): so is the home it is compared with.
  const home = await realpath(ctx.home).catch(() => undefined);
  if (home === undefined) return undefined;
  if (!isInside(home, target)) return undefined;
  const info = await stat(home);
  return { uid: info.uid, gid: info.gid };
}

/**
 * The file's folder, made if missing (private), and given to `owner` with every folder made on
 * the way. Root makes them one at a time and gives each away through a descriptor opened
 * without following links: a folder the user swaps for a link meanwhile fails to open (ELOOP)
 * instead of handing the link's target to the user.
 */
async function makeFolders(dir: string, owner: Owner | undefined): Promise<void> {
  if (owner === undefined) {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return;
  }
  const missing: string[] = [];
  for (let folder = dir; !existsSync(folder) && folder !== dirname(folder); folder = dirname(folder)) {
    missing.unshift(folder);
  }
  for (const folder of missing) {
    await mkdir(folder, { mode: 0o700 }).catch((err) => {
      if (errnoCode(err) !== "EEXIST") throw err;
    });
    const handle = await open(folder, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    try {
      await handle.chown(owner.uid, owner.gid);
    } finally {
      await handle.close();
    }
  }
}

/**
 * Root follows a user's links only within the user's home, to files of the home's owner: a
 * link from ~/.cursor/mcp.json to /etc/docker/daemon.json must not get that file edited. The
 * reason, for the warning; undefined when the file may be written (or mcpmgr is not root).
 */
async function rootRefusal(ctx: ClientContext, real: string): Promise<string | undefined> {
  const home = await realpath(ctx.home).catch(() => undefined);
  if (home === undefined) return undefined;
  const refuse = (why: string) => `${why}; mcpmgr runs as root and left it unchanged (edit it as its owner instead)`;
  if (!isInside(home, real)) return refuse(`its real path ${real} lies outside the home ${home}`);
  const existing = await stat(real).catch(() => undefined);
  const homeOwner = (await stat(home)).uid;
  if (existing !== undefined && existing.uid !== homeOwner) {
    return refuse(`${real} belongs to uid ${existing.uid}, not to the home's owner (uid ${homeOwner})`);
  }
  return undefined;
}

function isInside(home: string, path: string): boolean {
  const inside = relative(home, path);
  return inside !== "" && inside !== ".." && !inside.startsWith("../") && !isAbsolute(inside);
}

/** The real path of a file that may not exist yet: its nearest existing folder resolved, the rest appended. */
async function realOfMissing(path: string): Promise<string> {
  const real = await realpath(path).catch(() => undefined);
  if (real !== undefined) return real;
  const parent = dirname(path);
  if (parent === path) return path;
  return join(await realOfMissing(parent), basename(path));
}

/** The file a path leads to: itself, or the end of its chain of symlinks (even a dangling one). */
async function realTarget(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    let current = path;
    for (let hops = 0; hops < 40; hops++) {
      const info = await lstat(current).catch(() => undefined);
      if (info === undefined || !info.isSymbolicLink()) return current;
      current = resolve(dirname(current), await readlink(current));
    }
    return current;
  }
}

/**
 * Why a workload's start must not write into the client's file: mcpmgr wrote it before (its
 * backup or creation note is kept), and now the file is gone with every folder that says the
 * client is installed. The user uninstalled the client; making its folder again would bring back
 * a client that `client status` calls installed. Undefined when the file may be written.
 */
export function uninstalled(ctx: ClientContext, client: ClientDefinition): string | undefined {
  const path = client.configPath(ctx);
  const markers = client.installMarkers(ctx);
  if (existsSync(path) || markers.some((marker) => existsSync(marker))) return undefined;
  const backup = backupPath(ctx, client, path);
  if (!existsSync(backup) && !existsSync(`${backup}.created`)) return undefined;
  const folders = markers.filter((marker) => marker !== path);
  return `it looks uninstalled: the file mcpmgr wrote before is gone, and so is ${folders.join(" and ")}; mcpmgr does not make them again (installed again, it gets its file at the next start; 'mcpmgr client remove ${client.id}' stops following its groups)`;
}
