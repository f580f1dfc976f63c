/**
 * Reading an AI client's file only once its own program is done writing it (review 9 F4).
 *
 * Clients write their files in place (open with truncate, then write): for a moment the file is
 * empty, or holds the first part of its text. mcpmgr must never take such a read for the whole
 * file, or its atomic rename replaces the user's file with what it saw (every key of
 * ~/.claude.json gone, or the second half of a YAML file that still parses). So:
 *
 *   - a file changed in the last few seconds, or empty, is checked for a writer: on Linux, any
 *     process of this user (every process, as root) holding it open for writing, found through
 *     /proc; elsewhere, the file must first have been left alone for a moment;
 *   - the read itself must not race a change (the file's stamp before and after agrees);
 *   - the caller compares the stamp again just before its rename (`sameStamp`), and starts over
 *     if the file changed since it was read.
 *
 * All of it is bounded: a file that keeps being written for SETTLE_LIMIT_MS is given up on
 * with one warning, and left as it is.
 */
import { constants } from "node:fs";
import type { BigIntStats } from "node:fs";
import { open, readdir, readFile, readlink, stat } from "node:fs/promises";
import { descriptorPath, errnoCode } from "../state/atomic-file.ts";

/** The file must be left as it is: the message says why (a warning of the caller's). */
export class UnsettledFile extends Error {
  override readonly name: string = "UnsettledFile";
}

/**
 * The file is no UTF-8 text (UTF-16, Latin-1), or no file (a folder, a pipe where it belongs): broken as a
 * parse error is, until the user fixes it (warned about once, and shown by `client status`).
 */
export class UnreadableText extends UnsettledFile {
  override readonly name = "UnreadableText";
}

/** How long an edit waits for a client to finish writing its file before it gives up. */
export const SETTLE_LIMIT_MS = 5_000;
/** A file changed this recently may still be being written: its writers are looked for. */
const RECENT_MS = 5_000;
/** Without /proc, how long a file must have been left alone before it is taken as whole. */
const QUIET_MS = 1_000;
const POLL_MS = 50;

/** What identifies one version of a file: a write, a truncation or a replacement changes it. */
export interface FileStamp {
  readonly dev: bigint;
  readonly ino: bigint;
  readonly size: bigint;
  readonly mtimeNs: bigint;
  readonly ctimeNs: bigint;
}

export interface SettledText {
  readonly text: string;
  readonly stamp: FileStamp;
  /** Permission bits and owner of the version read. */
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  /** How many names the file has (hard links): more than one must be written in place. */
  readonly links: number;
  /** Where the descriptor read really led (/proc/self/fd), when that can be known. */
  readonly real?: string;
}

export interface SettleOptions {
  /** When to give up (Date.now() milliseconds). */
  readonly deadline: number;
  /** Told once when the read waits for a writer (the caller logs it). */
  readonly onWait?: (why: string) => void;
  /** How writers are looked for: `writerOf`; a test stands in for a platform without /proc. */
  readonly findWriter?: typeof writerOf;
}

function stampOf(info: BigIntStats): FileStamp {
  return { dev: info.dev, ino: info.ino, size: info.size, mtimeNs: info.mtimeNs, ctimeNs: info.ctimeNs };
}

export function sameStamp(a: FileStamp | undefined, b: FileStamp | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

/** The stamp of the file at `path` now, undefined when there is none. */
export async function currentStamp(path: string): Promise<FileStamp | undefined> {
  try {
    return stampOf(await stat(path, { bigint: true }));
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return undefined;
    throw err;
  }
}

/**
 * The file's whole text once no program is writing it, or undefined when there is no file.
 * Throws SkipEdit when it is still being written at the deadline.
 */
export async function readSettled(path: string, options: SettleOptions): Promise<SettledText | undefined> {
  let told = false;
  const wait = async (why: string) => {
    if (Date.now() >= options.deadline) {
      throw new UnsettledFile(
        `${why} for more than ${SETTLE_LIMIT_MS / 1000} s; mcpmgr left it unchanged (run the command again once it is done)`,
      );
    }
    if (!told) options.onWait?.(why);
    told = true;
    await Bun.sleep(POLL_MS);
  };
  for (;;) {
    const read = await readOnce(path);
    if (read === undefined) return undefined;
    if (read === "changing") {
      await wait("it kept changing while mcpmgr read it");
      continue;
    }
    const age = Date.now() - Number(read.stamp.mtimeNs / 1_000_000n);
    // Once a writer was seen, it is looked for again however long it pauses.
    if (read.stamp.size === 0n || age < RECENT_MS || told) {
      const writer = await (options.findWriter ?? writerOf)(path, read.stamp);
      if (writer !== null && writer !== undefined) {
        await wait(`${writer.command} (pid ${writer.pid}) is writing it`);
        continue;
      }
      // No way to see writers here: a file changed a moment ago (or empty since then) waits until it is left alone.
      if (writer === undefined && age >= 0 && age < QUIET_MS) {
        await wait("another program is writing it");
        continue;
      }
      // A writer that finished (and closed the file) after the read but before the look for it
      // left a first part behind in what was read: the file is no longer the version read.
      if (!sameStamp(read.stamp, await currentStamp(path))) {
        await wait("it changed while mcpmgr read it");
        continue;
      }
    }
    return read;
  }
}

/**
 * One read, opened without blocking and checked on the open descriptor: a named pipe in the
 * file's place would block the read (and every `run` and `stop` of the group with it) until
 * something wrote to it. "changing" when the file changed while it was read.
 */
async function readOnce(path: string): Promise<SettledText | "changing" | undefined> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    // Windows has no O_NONBLOCK (nor named pipes at such a path): plain read-only there.
    handle = await open(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return undefined;
    throw err;
  }
  try {
    const before = await handle.stat({ bigint: true });
    if (!before.isFile())
      throw new UnreadableText(`it is ${kindOf(before)}, not a regular file; mcpmgr left it unchanged`);
    const bytes = await handle.readFile();
    const after = await handle.stat({ bigint: true });
    const real = await descriptorPath(handle);
    // A file replaced by rename keeps this descriptor on the old one: the path is checked too.
    const now = await currentStamp(path);
    if (!sameStamp(stampOf(before), stampOf(after)) || !sameStamp(stampOf(after), now)) return "changing";
    return {
      text: utf8(bytes),
      stamp: stampOf(after),
      mode: Number(after.mode) & 0o7777,
      uid: Number(after.uid),
      gid: Number(after.gid),
      links: Number(after.nlink),
      ...(real !== undefined ? { real } : {}),
    };
  } finally {
    await handle.close();
  }
}

/**
 * The file's text. Every client reads its file as UTF-8 (JSON, YAML and TOML require it); a file
 * saved in another encoding (Latin-1 from an old editor) would come back with each byte that is
 * not UTF-8 replaced by U+FFFD, a character of the user's lost for good (and in the backup too):
 * it is left alone instead. The byte order mark stays in the text, for the caller to keep.
 */
function utf8(bytes: Uint8Array): string {
  // UTF-16 (Windows PowerShell's > and Out-File, Notepad's "Unicode"): its byte order mark is no UTF-8 and was
  // reported as "another encoding, such as Latin-1?"; without one, an ASCII character's other byte is a NUL.
  const [first, second] = bytes;
  if (
    (first === 0xff && second === 0xfe) ||
    (first === 0xfe && second === 0xff) ||
    (bytes.length >= 2 && (first === 0) !== (second === 0))
  ) {
    throw new UnreadableText(
      "it is UTF-16 text, not UTF-8 (as Windows PowerShell's > and Out-File save files); mcpmgr left it unchanged (save it as UTF-8, as the client reads it)",
    );
  }
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    const lenient = new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
    const at = lenient.indexOf("\uFFFD");
    const line = lenient.slice(0, at).split("\n").length;
    throw new UnreadableText(
      `it is not UTF-8 text (line ${line} holds a byte that is not; another encoding, such as Latin-1?); mcpmgr left it unchanged (save it as UTF-8, as the client reads it)`,
    );
  }
}

function kindOf(info: BigIntStats): string {
  if (info.isDirectory()) return "a directory";
  if (info.isFIFO()) return "a named pipe";
  if (info.isSocket()) return "a socket";
  if (info.isCharacterDevice() || info.isBlockDevice()) return "a device";
  return "a special file";
}

interface FileWriter {
  readonly pid: number;
  readonly command: string;
}

/**
 * A process (not this one) holding the file open for writing: found through /proc, among the
 * processes whose descriptors this user may see (all of them for root). null when there is
 * none; undefined when it cannot be told (no /proc: macOS, Windows).
 */
async function writerOf(path: string, file: FileStamp): Promise<FileWriter | null | undefined> {
  if (process.platform !== "linux") return undefined;
  let pids: string[];
  try {
    pids = (await readdir("/proc")).filter((name) => /^\d+$/.test(name) && name !== String(process.pid));
  } catch {
    return undefined;
  }
  // Another name of a hard-linked file is told by its inode; one name alone, by its path (one call less per descriptor).
  const byInode = ((await stat(path, { bigint: true }).catch(() => undefined))?.nlink ?? 1n) > 1n;
  for (const pid of pids) {
    const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
    const opened = await Promise.all(fds.map((fd) => opensFile(`/proc/${pid}/fd/${fd}`, path, file, byInode)));
    for (const [index, fd] of fds.entries()) {
      if (opened[index] && (await openForWriting(pid, fd))) {
        const command = (await readFile(`/proc/${pid}/comm`, "utf8").catch(() => "a program")).trim();
        return { pid: Number(pid), command };
      }
    }
  }
  return null;
}

/** Whether a descriptor's link names the file: by path, or (for another name of a hard-linked file) by inode. */
async function opensFile(link: string, path: string, file: FileStamp, byInode: boolean): Promise<boolean> {
  const target = await readlink(link).catch(() => undefined);
  if (target === undefined || !target.startsWith("/")) return false;
  if (target === path) return true;
  if (!byInode) return false;
  const info = await stat(link, { bigint: true }).catch(() => undefined);
  return info !== undefined && info.dev === file.dev && info.ino === file.ino;
}

/** The descriptor's open flags (octal in fdinfo) say write-only or read-write. */
async function openForWriting(pid: string, fd: string): Promise<boolean> {
  const info = await readFile(`/proc/${pid}/fdinfo/${fd}`, "utf8").catch(() => "");
  const flags = /^flags:\s*([0-7]+)/m.exec(info)?.[1];
  return flags !== undefined && (Number.parseInt(flags, 8) & 0o3) !== 0;
}
