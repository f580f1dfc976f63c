/**
 * A client's file written through its own inode: a hard-linked one (a rename would part it from
 * its other names) and another user's shared one (a rename would make it this user's). Such a
 * write is not atomic: a process killed between its first byte and the cut to the new length
 * (SIGKILL, the OOM killer, a closed terminal's kill) left the file half new, half old (a shorter
 * text followed by the old one's tail), which the client cannot read, with nothing to repair it
 * from but the backup of mcpmgr's first change, older than every change since.
 *
 * So the version read and the new text are first written whole and flushed, atomically, to a
 * journal in mcpmgr's data folder (private: these files hold tokens; compressed: two copies of a
 * 25 MB ~/.claude.json, where a file size limit or a nearly full disk may take only one); the
 * journal goes once the new text is on disk. The next edit of the file finds a journal left behind (under the file's
 * lock, so its writer is gone): a file that is exactly such a mix is put back as it was read; one
 * that holds anything else (its program wrote it since) is left as it is, the version read kept
 * beside the backup and named in a warning.
 */
import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { type FileHandle, open, readFile, stat, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { descriptorPath, errnoCode, removeLeftTemps, writeFileAtomic } from "../state/atomic-file.ts";
import { backupPath } from "./backup.ts";
import { type FileStamp, sameStamp } from "./settled-read.ts";
import type { ClientContext, ClientDefinition } from "./types.ts";

interface Journal {
  readonly target: string;
  readonly before: string;
  readonly after: string;
}

/** One journal per real file (two files of one client may share a name: CLAUDE_CONFIG_DIR changed). */
export function journalPath(ctx: ClientContext, client: ClientDefinition, target: string): string {
  const id = createHash("sha256").update(target).digest("hex").slice(0, 16);
  return join(dirname(backupPath(ctx, client, target)), `.in-place-${id}.json.gz`);
}

/**
 * Writes `text` over the file as it was `read`, the journal first. False when the file is no
 * longer the version read (nothing written). A write the disk cannot take whole (full, a file
 * size limit) puts the version read back, byte for byte, before the error goes on.
 */
export async function writeInPlace(
  ctx: ClientContext,
  client: ClientDefinition,
  target: string,
  text: string,
  read: { stamp: FileStamp; text: string },
): Promise<boolean> {
  const journal = journalPath(ctx, client, target);
  const entry: Journal = { target, before: read.text, after: text };
  await writeFileAtomic(journal, gzipSync(JSON.stringify(entry), { level: 1 }));
  const handle = await open(target, constants.O_WRONLY | (constants.O_NOFOLLOW ?? 0));
  try {
    const info = await handle.stat({ bigint: true });
    const now = { dev: info.dev, ino: info.ino, size: info.size, mtimeNs: info.mtimeNs, ctimeNs: info.ctimeNs };
    if (!sameStamp(read.stamp, now)) {
      await dropJournal(journal);
      return false;
    }
    try {
      await replaceContents(handle, Buffer.from(text));
    } catch (err) {
      // The version read fits where it was (its blocks are the file's): put back, the error reported.
      // Put back whole, the journal is done with; otherwise it stays for the next edit to repair from.
      const restored = await replaceContents(handle, Buffer.from(read.text)).then(
        () => true,
        () => false,
      );
      if (restored) await dropJournal(journal);
      throw err;
    }
    await handle.sync();
    await dropJournal(journal);
    return true;
  } finally {
    await handle.close();
  }
}

/**
 * Repairs the file from a journal an earlier, killed edit left (see above). Called under the
 * file's lock, before it is read. `checked`: as root, the real path the file must really be at.
 */
export async function repairCutShortWrite(
  ctx: ClientContext,
  client: ClientDefinition,
  target: string,
  checked?: string,
): Promise<void> {
  const journal = journalPath(ctx, client, target);
  const kept = `${backupPath(ctx, client, target)}.before-cut-short-write`;
  // A writer of either killed before its rename left a whole copy (tokens and all) in a temporary
  // file nothing else looks at; every such writer holds this lock, so a dead one's is safe to go.
  await removeLeftTemps(journal);
  await removeLeftTemps(kept);
  const entry = await readJournal(journal, await journalLimit(target));
  if (entry === undefined) return;
  if (entry.target !== target) return dropJournal(journal);
  const before = Buffer.from(entry.before);
  const after = Buffer.from(entry.after);
  let handle: FileHandle;
  try {
    // Not blocking: a pipe put in the file's place since is not waited on (readSettled refuses it).
    handle = await open(target, constants.O_RDWR | constants.O_NONBLOCK | (constants.O_NOFOLLOW ?? 0));
  } catch (err) {
    // Gone (or no longer a file): there is nothing of mcpmgr's half-write left to repair.
    if (["ENOENT", "ELOOP", "EISDIR"].includes(errnoCode(err) ?? "")) return dropJournal(journal);
    throw err;
  }
  try {
    // Root: a folder on the path the user swapped for a link since leads to a file not theirs.
    const real = checked === undefined ? undefined : await descriptorPath(handle);
    if (real !== undefined && real !== checked) return;
    if (!(await handle.stat()).isFile()) return await dropJournal(journal);
    const now = await handle.readFile();
    if (now.equals(before) || now.equals(after)) return await dropJournal(journal);
    if (isCutShort(now, before, after)) {
      await replaceContents(handle, before);
      await handle.sync();
      ctx.log.info(
        `${client.displayName} (${target}): mcpmgr's last change to it was cut short (mcpmgr was killed mid-write); put back as it was before that change`,
      );
      return await dropJournal(journal);
    }
  } finally {
    await handle.close();
  }
  await writeFileAtomic(kept, entry.before);
  ctx.log.warn(
    `${client.displayName} (${target}): mcpmgr's last change to it was cut short, and it has changed since, so mcpmgr left it as it is; its text before that change is kept in ${kept}`,
  );
  await dropJournal(journal);
}

/**
 * Whether `now` is what a write of `after` over `before` leaves when stopped anywhere: the first
 * bytes of `after`, then the rest of `before` (the new text not yet cut to its length, or only
 * partly written). The longest prefix `now` shares with `after` is where the write stopped (bytes
 * the two texts have in common are the same either way).
 */
export function isCutShort(now: Buffer, before: Buffer, after: Buffer): boolean {
  let written = 0;
  const most = Math.min(now.length, after.length);
  while (written < most && now[written] === after[written]) written++;
  if (written > before.length) return now.length === written;
  return now.length === before.length && now.subarray(written).equals(before.subarray(written));
}

/** The file's bytes become `bytes`: written whole (a write may take only part of them), then cut to their length. */
async function replaceContents(handle: FileHandle, bytes: Buffer): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, done, bytes.length - done, done);
    if (bytesWritten === 0) throw new Error("the file took no more bytes");
    done += bytesWritten;
  }
  await handle.truncate(bytes.length);
}

/**
 * The most a journal of `target` may inflate to: its two texts, JSON-escaped, of a file about this
 * size. A journal is only ever ours, but its folder is the user's: as root, a planted one that
 * inflates to gigabytes is dropped instead of read into memory.
 */
async function journalLimit(target: string): Promise<number> {
  const size = await stat(target).then(
    (info) => info.size,
    () => 0,
  );
  return 16 * size + 64 * 1024 * 1024;
}

async function readJournal(path: string, limit: number): Promise<Journal | undefined> {
  const bytes = await readFile(path).catch((err) => {
    if (errnoCode(err) === "ENOENT") return undefined;
    throw err;
  });
  if (bytes === undefined) return undefined;
  try {
    const entry = JSON.parse(gunzipSync(bytes, { maxOutputLength: limit }).toString("utf8")) as Partial<Journal>;
    if (typeof entry.before === "string" && typeof entry.after === "string" && typeof entry.target === "string") {
      return entry as Journal;
    }
  } catch {
    // Written atomically, it is whole or absent; anything else is not ours to act on.
  }
  await dropJournal(path);
  return undefined;
}

async function dropJournal(path: string): Promise<void> {
  await unlink(path).catch(() => {});
}
