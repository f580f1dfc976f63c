/**
 * Where audit lines go: the configured logFile (appended, mode 0600), else the workload's
 * log (detached) or stderr (foreground). File writes are buffered and
 * flushed every 200 ms (or at 64 KiB) and on close: a write per event through a Node stream cost about a
 * tenth of the proxy's CPU per request. A crash can lose at most the last 200 ms of lines.
 * A log moved away (rotated) or deleted under a running proxy is noticed within those 200 ms
 * and opened again at its path, so lines do not keep going to a file nobody reads any more.
 * At the stop, what a pipe's slow reader has not taken yet gets up to 2 s to drain; lines left
 * then are dropped, and their number said in the proxy log.
 */
import { closeSync, constants, fstatSync, ftruncateSync, lstatSync, openSync, statSync, writeSync } from "node:fs";
import type { AuditConfig } from "../config/audit-config.ts";
import { errorMessage, McpmgrError } from "../errors.ts";
import { trustedOwners } from "../state/private-dirs.ts";

export interface AuditSink {
  readonly write: (line: string) => void;
  close(): Promise<void>;
}

const FLUSH_EVERY_MS = 200;

/**
 * Why an opened log is not mcpmgr's user's own file, if it is not. In a shared folder (`/tmp`)
 * another user can create the file (or a link to a file of theirs) before mcpmgr does: the audit
 * lines, request data included, would be theirs to read, and theirs to rewrite.
 */
function foreignOwner(fd: number): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  const owner = fstatSync(fd).uid;
  // Root's files are trusted as for mcpmgr's folders (state/private-dirs.ts): `/dev/null`, or
  // `/dev/stdout` when it is a service manager's socket, belong to root and are common log targets.
  return trustedOwners(uid).has(owner) ? undefined : `it belongs to uid ${owner}, not to mcpmgr's user (uid ${uid})`;
}

/** Opens the log for appending: an audit log that cannot be written would lose every line, so that is a start-up error. */
function openForAppend(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, "a", 0o600);
  } catch (err) {
    throw new McpmgrError(
      "INVALID_OPTION",
      `audit logFile ${path} cannot be written: ${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}`,
      {
        hint: "point logFile at a writable file, or leave it out to write audit lines to the workload's log",
      },
    );
  }
  const foreign = foreignOwner(fd);
  if (foreign !== undefined) {
    closeSync(fd);
    throw new McpmgrError("INVALID_OPTION", `audit logFile ${path} is refused: ${foreign}`, {
      hint: "point logFile at a file in a folder only you can write to (remove the other user's file first)",
    });
  }
  return withoutBlocking(fd);
}

/**
 * A pipe (a FIFO, `/dev/stdout` piped to a log shipper) opened again without blocking: a reader that
 * falls behind must not stop the proxy (a flush is a synchronous write on the request's path), so
 * what the pipe cannot take now waits for the next flush. A regular file is returned as it is.
 */
function withoutBlocking(fd: number): number {
  if (!fstatSync(fd).isFIFO()) return fd;
  try {
    // The very pipe held (by its descriptor, not its path, which may name something else by now).
    const nonBlocking = openSync(`/proc/self/fd/${fd}`, constants.O_WRONLY | constants.O_NONBLOCK);
    closeSync(fd);
    return nonBlocking;
  } catch {
    return fd;
  }
}

/** Fails now, before anything starts, when the configured logFile cannot be written. */
export function assertAuditLogWritable(config: AuditConfig): void {
  if (config.logFile !== undefined) closeSync(openForAppend(config.logFile));
}

/** `elsewhere`: where lines go without a logFile (the workload's log, or stderr in the foreground). */
export function auditSink(
  config: AuditConfig,
  elsewhere: (line: string) => void,
  onError: (message: string) => void,
): AuditSink {
  if (config.logFile === undefined) return { write: elsewhere, close: async () => {} };
  const path = config.logFile;
  let fd = openForAppend(path);
  // A log configured as a symbolic link is followed; one that was a file is not replaced by a link later.
  const followLinks = isSymlink(path);
  let buffered: string[] = [];
  let bufferedBytes = 0;
  let refusedIno: number | undefined;
  let failureSaidAt: number | undefined;
  // What a pipe did not take yet (its reader fell behind): written first at the next flush.
  let carried: Buffer | undefined;
  /**
   * Our own buffer, written with one write(2) per flush rather than through a Bun FileSink: a sink
   * whose write fails (a full disk) rejects where nothing can catch it and then writes nothing more,
   * even once there is space again. Here a failed write drops those lines, cuts off the part of them
   * the disk took (never half a line for the next one to join), is said at most once a minute, and
   * the next flush writes again.
   */
  const flush = () => {
    if (buffered.length === 0 && carried === undefined) return;
    const fresh = Buffer.from(buffered.join(""));
    const data = carried === undefined ? fresh : Buffer.concat([carried, fresh]);
    carried = undefined;
    buffered = [];
    bufferedBytes = 0;
    let written = 0;
    try {
      while (written < data.length) written += writeSync(fd, data, written);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EAGAIN" && data.length - written <= MAX_CARRIED_BYTES) {
        carried = data.subarray(written);
        return;
      }
      // Only the bytes this flush wrote are cut off, counted back from the end (appended, they were the
      // last bytes when the disk filled up). The log may be shared with another workload: a size looked
      // at before the write is no bound to cut back to, since the other's lines may have come since.
      try {
        const size = written > 0 ? fstatSync(fd).size : 0;
        if (written > 0 && size >= written) ftruncateSync(fd, size - written);
      } catch {
        // Nothing to repair with.
      }
      const now = performance.now();
      if (failureSaidAt === undefined || now - failureSaidAt >= 60_000) {
        failureSaidAt = now;
        onError(`audit log ${path}: ${errorMessage(err)}; audit lines are dropped until it can be written`);
      }
    }
  };
  /** The file the path names now is not the one written to (rotated, deleted): open the path again. */
  const reopenIfMoved = () => {
    if (!movedAway(path, fd)) return;
    let fresh: number;
    try {
      fresh = followLinks
        ? openSync(path, "a", 0o600)
        : openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
      fresh = withoutBlocking(fresh);
    } catch (err) {
      onError(`audit log ${path} was moved away and cannot be opened again: ${errorMessage(err)}`);
      return;
    }
    const foreign = foreignOwner(fresh);
    if (foreign !== undefined) {
      // Someone else's file took the log's place: lines keep going to the one mcpmgr had (said once per file).
      const ino = fstatSync(fresh).ino;
      closeSync(fresh);
      if (ino !== refusedIno) onError(`audit log ${path} is now another user's file (${foreign}); not writing to it`);
      refusedIno = ino;
      return;
    }
    const old = fd;
    fd = fresh;
    closeQuietly(old);
  };
  const timer = setInterval(() => {
    flush();
    reopenIfMoved();
  }, FLUSH_EVERY_MS);
  timer.unref();
  return {
    write(line) {
      buffered.push(line);
      bufferedBytes += line.length;
      if (bufferedBytes >= FLUSH_AT_BYTES) flush();
    },
    async close() {
      clearInterval(timer);
      flush();
      // A pipe's reader that fell behind gets a moment to take the last lines; the stop does not wait on it longer.
      const deadline = performance.now() + DRAIN_ON_CLOSE_MS;
      while (carried !== undefined && performance.now() < deadline) {
        await Bun.sleep(DRAIN_POLL_MS);
        flush();
      }
      if (carried !== undefined) {
        // A line begun in the pipe but not ended counts as dropped: its end is.
        let lines = 0;
        for (const byte of carried) if (byte === 0x0a) lines++;
        onError(
          `audit log ${path}: its reader did not take the last ${lines} audit line${lines === 1 ? "" : "s"} within ${DRAIN_ON_CLOSE_MS / 1000} s of the stop; they were dropped`,
        );
        carried = undefined;
      }
      closeQuietly(fd);
    },
  };
}

/** Lines held before a flush that the timer has not come to yet (as much as the sink held before). */
const FLUSH_AT_BYTES = 64 * 1024;
/** How much a pipe's slow reader may leave waiting before the lines are dropped (and that is said). */
const MAX_CARRIED_BYTES = 16 * 1024 * 1024;
/** How long a stop waits for a pipe's slow reader to take the lines it left waiting. */
export const DRAIN_ON_CLOSE_MS = 2_000;
const DRAIN_POLL_MS = 20;

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

function movedAway(path: string, fd: number): boolean {
  try {
    const named = statSync(path);
    const held = fstatSync(fd);
    return named.ino !== held.ino || named.dev !== held.dev;
  } catch {
    return true;
  }
}
