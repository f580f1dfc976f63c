/**
 * A workload's logs, the server's and the proxy's, as a supervisor writes them (`cappedLog`:
 * workload/supervisor.ts, cli/supervise.ts): rotated at a size cap to `<log>.1`, so the whole of
 * a log is the rotated part, then the log; and following it means noticing a rotation (by the
 * file's inode, or a log emptied in place) and reading the rest of the old file before the new one. Copies go to a sink in
 * chunks, waiting for a slow reader; `mcpmgr logs` (cli/logs.ts) is the user.
 */
import { Buffer } from "node:buffer";
import {
  appendFileSync,
  closeSync,
  copyFileSync,
  fstatSync,
  openSync,
  readSync,
  renameSync,
  statSync,
  truncateSync,
} from "node:fs";
import { open } from "node:fs/promises";

/** How much of a log is held at once: a log may be as large as its cap (10 MiB unless set higher). */
const CHUNK_BYTES = 1 << 20;

export const READER_GONE = "reader gone";

/** Where copied bytes go; false once nobody reads them any more (the copy then stops). */
export type LogSink = (chunk: Buffer) => Promise<boolean>;

export interface LogFiles {
  readonly path: string;
  /** Where a rotation moves the log (`<log>.1`). */
  readonly rotated: string;
}

/**
 * How far the log was copied: the file (by inode, which a rotation or a new file changes, the
 * path staying the same) and how many of its bytes.
 */
export interface LogPosition {
  readonly ino: number | undefined;
  readonly offset: number;
}

/**
 * Appends to a log: the server's output, or everything the supervisor itself prints (the proxy
 * log). Once the log reaches `maxBytes` it is renamed to `rotated` (replacing the previous one)
 * and the next write starts a new log, so a log takes at most about twice the cap; `mcpmgr logs`
 * shows both parts. The writes are whole lines (server-output.ts; console lines), so neither part
 * starts or ends within a line. The size is counted as it is written, not asked of the file on
 * every line: the file is looked at once, for what an earlier run of the workload left in it.
 *
 * `inPlace`: the log is also a process's stdout and stderr, opened for appending once (the proxy
 * log: a supervisor's, for what the runtime writes there itself, such as a crash report), so it
 * is rotated by copying it to `rotated` and emptying it where it is. A rename would leave those
 * descriptors on the rotated file, and the next rotation would delete it under them: whatever they
 * wrote from then on would be lost. Emptied in place, the file they write to stays the log, and
 * (opened for appending) they write at its new end. Only this process writes the log between the
 * copy and the truncation, and it is busy rotating, so no line falls between the two.
 */
export function cappedLog(
  path: string,
  rotated: string,
  maxBytes: number,
  options: { readonly inPlace?: boolean } = {},
): (text: string) => void {
  let size = statSync(path, { throwIfNoEntry: false })?.size ?? 0;
  return (text) => {
    try {
      appendFileSync(path, text, { mode: 0o600 });
    } catch (err) {
      // Part of the text may have been written (the disk filled up within it): cut it off again,
      // so the log never holds half a line that the next line, written once there is space, would join.
      try {
        if ((statSync(path, { throwIfNoEntry: false })?.size ?? 0) > size) truncateSync(path, size);
      } catch {
        // The log cannot even be looked at: nothing to repair.
      }
      throw err;
    }
    size += Buffer.byteLength(text);
    if (size < maxBytes) return;
    try {
      if (options.inPlace) {
        copyFileSync(path, rotated);
        truncateSync(path, 0);
      } else renameSync(path, rotated);
    } catch {
      // Deleted meanwhile (by hand): the next write starts a new log all the same.
    }
    size = 0;
  };
}

/**
 * Whether the log's last line has no end: a server's last output before it exited need not end its
 * line (server-output.ts writes what it had). A line of mcpmgr's own written next must start a line
 * of its own, not finish the server's. False when the log is empty, missing or unreadable.
 */
export function endsMidLine(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    const size = fstatSync(fd).size;
    if (size === 0) return false;
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    return last[0] !== 0x0a;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * A log writer that never throws: a log that cannot be written (a full disk, a folder made
 * read-only) must not stop what writes it (a supervisor's server output reader would stop
 * reading, the server would block on a full pipe, and the failure would end the supervisor).
 * The lines are dropped until a write succeeds again; `onFailure` hears of a failure at most once
 * every `quietMs` (a nearly full disk takes a short line now and then between failures), so the
 * log says why lines are missing rather than once per line.
 */
export function bestEffortLog(
  append: (text: string) => void,
  onFailure: (err: unknown) => void,
  quietMs = 60_000,
): (text: string) => void {
  let reportedAt: number | undefined;
  return (text) => {
    try {
      append(text);
    } catch (err) {
      const now = performance.now();
      if (reportedAt !== undefined && now - reportedAt < quietMs) return;
      reportedAt = now;
      try {
        onFailure(err);
      } catch {
        // Reporting it went wrong too (the same full disk): the lines are dropped all the same.
      }
    }
  };
}

type FileHandle = Awaited<ReturnType<typeof open>>;

async function openIfThere(path: string): Promise<FileHandle | undefined> {
  try {
    return await open(path, "r");
  } catch {
    return undefined;
  }
}

/** The rotated part, then the log: everything kept, in the order it was written. */
export async function copyWhole(
  files: LogFiles,
  sink: LogSink,
): Promise<(LogPosition & { copied: number }) | typeof READER_GONE> {
  // The log is opened first: rotated between the two opens, it is the rotated file too, and still read whole.
  const current = await openIfThere(files.path);
  try {
    const ino = current === undefined ? undefined : (await current.stat()).ino;
    let copied = 0;
    const older = await openIfThere(files.rotated);
    if (older !== undefined) {
      try {
        if ((await older.stat()).ino !== ino) {
          const end = await copyFrom(older, 0, sink);
          if (end === READER_GONE) return READER_GONE;
          copied += end;
        }
      } finally {
        await older.close();
      }
    }
    if (current === undefined) return { ino, offset: 0, copied };
    const end = await copyFrom(current, 0, sink);
    if (end === READER_GONE) return READER_GONE;
    return { ino, offset: end, copied: copied + end };
  } finally {
    await current?.close();
  }
}

/**
 * What was written since `at`. When the log followed was rotated, the rest of it is read from
 * the rotated file first, then the new log from its start: nothing is lost or shown twice (unless
 * the log was rotated twice within one poll). A log emptied in place (rotated by `cappedLog`'s
 * `inPlace`, or truncated by hand) is read again from its start, after the rest of it from the
 * rotated copy when that copy reaches as far as the log was read.
 */
export async function copyNew(
  files: LogFiles,
  at: LogPosition,
  sink: LogSink,
): Promise<LogPosition | typeof READER_GONE> {
  const current = await openIfThere(files.path);
  try {
    const stat = current === undefined ? undefined : await current.stat();
    let position = at;
    if (at.ino !== undefined && stat?.ino !== at.ino) {
      const rest = await copyRestOfRotated(files.rotated, at, sink);
      if (rest === READER_GONE) return READER_GONE;
      // The new log has not been written yet: keep following the rotated one's inode until it is.
      if (current === undefined || stat === undefined) return rest;
      position = { ino: stat.ino, offset: 0 };
    }
    if (current === undefined || stat === undefined) return position;
    if (position.ino === stat.ino && position.offset > stat.size) {
      const rest = await copyRestOfCopy(files.rotated, stat.ino, position.offset, sink);
      if (rest === READER_GONE) return READER_GONE;
      position = { ino: stat.ino, offset: 0 };
    }
    const from = position.ino === stat.ino ? position.offset : 0;
    const end = await copyFrom(current, from, sink);
    return end === READER_GONE ? READER_GONE : { ino: stat.ino, offset: end };
  } finally {
    await current?.close();
  }
}

/** The rest of the log followed, if the rotated file is it; else (removed, replaced) nothing. */
async function copyRestOfRotated(
  rotated: string,
  at: LogPosition,
  sink: LogSink,
): Promise<LogPosition | typeof READER_GONE> {
  const older = await openIfThere(rotated);
  if (older === undefined) return at;
  try {
    if ((await older.stat()).ino !== at.ino) return at;
    const end = await copyFrom(older, at.offset, sink);
    return end === READER_GONE ? READER_GONE : { ino: at.ino, offset: end };
  } finally {
    await older.close();
  }
}

/** The rest of a log emptied in place, from its rotated copy (another file, at least `offset` long), if there is one. */
async function copyRestOfCopy(
  rotated: string,
  ino: number,
  offset: number,
  sink: LogSink,
): Promise<undefined | typeof READER_GONE> {
  const copy = await openIfThere(rotated);
  if (copy === undefined) return undefined;
  try {
    const stat = await copy.stat();
    if (stat.ino === ino || stat.size < offset) return undefined;
    const end = await copyFrom(copy, offset, sink);
    return end === READER_GONE ? READER_GONE : undefined;
  } finally {
    await copy.close();
  }
}

/** Copies the file from `offset` to its current end into `sink`; returns the new offset, or READER_GONE. */
async function copyFrom(handle: FileHandle, offset: number, sink: LogSink): Promise<number | typeof READER_GONE> {
  const { size } = await handle.stat();
  if (size <= offset) return offset;
  const buffer = Buffer.alloc(Math.min(CHUNK_BYTES, size - offset));
  while (offset < size) {
    const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, size - offset), offset);
    if (bytesRead === 0) break;
    // Copied (the buffer is reused), and waited for when the reader is slower than the disk (`| less`).
    if (!(await sink(Buffer.from(buffer.subarray(0, bytesRead))))) return READER_GONE;
    offset += bytesRead;
  }
  return offset;
}
