/**
 * One safe change to an AI client's configuration file:
 *
 *   lock     `<file>.mcpmgr-lock` (src/state/lock.ts) for the read-modify-write, so two mcpmgr
 *            processes, even with different MCPMGR_HOMEs, never lose each other's entries.
 *   read     through a symlink to the real file (dotfile managers link these files; replacing
 *            the link by a copy would silently fork the user's configuration).
 *   edit     by the format's editor; a file that does not parse is left alone, with one warning.
 *   backup   the file as it was before mcpmgr first changed it, once, in
 *            <dataDir>/client-backups/<client>/<file name> (private: these files hold tokens).
 *   write    only when the text changed, atomically (temp file + rename), keeping the
 *            original's permission bits.
 *
 * Clients that rewrite their own file at any moment (Claude Code does, for ~/.claude.json)
 * do not take our lock; the atomic rename keeps the file whole, but a change one of them makes
 * at the very same instant can still win over ours, as with their own CLIs.
 */
import { existsSync } from "node:fs";
import { chmod, lstat, open, readFile, readlink, realpath, stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { isMcpmgrError } from "../errors.ts";
import { ensureDir, errnoCode, writeFileAtomic } from "../state/atomic-file.ts";
import { withLock } from "../state/lock.ts";
import { ConfigParseError, type FormatEditor, loadEditor } from "./formats/editor.ts";
import type { ClientContext, ClientDefinition } from "./types.ts";

/** Raised inside an edit to leave the file untouched, with the reason as the warning. */
export class SkipEdit extends Error {
  override readonly name = "SkipEdit";
}

export type EditResult = { readonly changed: boolean; readonly skipped?: undefined } | { readonly skipped: string };

export interface EditOptions {
  /** Whether a missing file may be created (adding an entry) or means there is nothing to do (removing one). */
  readonly create: boolean;
}

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
    await ensureDir(dirname(target));
    return await withLock(`${target}.mcpmgr-lock`, async () => {
      const original = await readIfExists(target);
      const editor = await loadEditor(client.format);
      const before = original ?? (options.create ? (client.newFileText ?? "") : "");
      if (original === undefined && !options.create) return { changed: false };
      const after = edit(before, editor);
      if (after === before) return { changed: false };
      const mode = original === undefined ? NEW_FILE_MODE : (await stat(target)).mode & 0o7777;
      await backupOnce(ctx, client, path, original);
      await writeFileAtomic(target, after, { mode });
      // The temporary file's mode went through the umask; the original's bits are restored exactly.
      if (((await stat(target)).mode & 0o7777) !== mode) await chmod(target, mode);
      return { changed: true };
    });
  } catch (err) {
    if (err instanceof ConfigParseError) {
      return { skipped: `${err.message}; mcpmgr left it unchanged (once it is fixed, the next change is written)` };
    }
    if (err instanceof SkipEdit) return { skipped: err.message };
    // A file built to exhaust a parser's stack: refused like any broken file, never the end of the whole update.
    if (err instanceof RangeError) {
      return { skipped: `it cannot be read (${err.message}); mcpmgr left it unchanged` };
    }
    // Unreadable, unwritable, locked for too long: a warning, never a failed `run`.
    if (isMcpmgrError(err) || errnoCode(err) !== undefined) {
      return { skipped: `cannot update it: ${(err as Error).message}` };
    }
    throw err;
  }
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

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return undefined;
    throw err;
  }
}

export function backupPath(ctx: ClientContext, client: ClientDefinition, path: string): string {
  return join(ctx.paths.dataDir, "client-backups", client.id, basename(path));
}

/**
 * The first version mcpmgr touched, kept once: later changes never overwrite it. A file mcpmgr
 * creates has no earlier version; `<backup>.created` records that instead, so a later change
 * does not mistake mcpmgr's own first write for the user's file.
 */
async function backupOnce(
  ctx: ClientContext,
  client: ClientDefinition,
  path: string,
  text: string | undefined,
): Promise<void> {
  const backup = backupPath(ctx, client, path);
  const created = `${backup}.created`;
  if (existsSync(backup) || existsSync(created)) return;
  await ensureDir(dirname(backup));
  const written = await writeOnce(
    text === undefined ? created : backup,
    text ?? `mcpmgr created ${path}; there was no earlier version to keep\n`,
  );
  if (written && text !== undefined) ctx.log.info(`saved ${path} as it was before mcpmgr's first change: ${backup}`);
}

/** Writes a new private file; false if it exists already (another mcpmgr got there first). */
async function writeOnce(path: string, text: string): Promise<boolean> {
  try {
    const handle = await open(path, "wx", 0o600);
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    return true;
  } catch (err) {
    if (errnoCode(err) === "EEXIST") return false;
    throw err;
  }
}
