/**
 * An inter-process lock for short critical sections over state files (read-modify-write of
 * workload records). Two mcpmgr invocations (`run` next to `rm`, a supervisor writing its
 * status) must not interleave those, and Bun has no flock(2), so the lock is a file:
 *
 *   acquire  write {pid, host, token, createdAt, uid} to a private temp file, then link(2) it to
 *            the lock path. link fails with EEXIST if the lock exists, and unlike
 *            open(O_EXCL)+write the lock never exists half-written. Filesystems without hard
 *            links fall back to open(O_CREAT|O_EXCL).
 *   wait     if held, retry with jittered exponential backoff (two waiters do not retry in
 *            lock-step) until `timeoutMs`, then McpmgrError STATE_LOCKED.
 *   stale    a lock whose holder is dead (same host, pid gone or a zombie; a holder of our own uid
 *            whose pid /proc hides is another user's process since) or older than `staleMs` (pid
 *            reused by another program, or held from another host) is broken. Breaking is
 *            itself done under a second O_EXCL file and re-checks the holder's token, so two
 *            waiters that both saw the stale lock cannot delete a fresh lock taken in between.
 *   release  unlink, but only if the file still carries our token (if our lock was broken as
 *            stale, it is someone else's now).
 *
 * Not re-entrant: calling withLock on the same path inside its own callback waits for itself
 * until the timeout. Keep callbacks to file I/O: never spawn or wait for servers under it.
 * (proper-lockfile was considered; it decides staleness by mtime alone and needs a timer to
 * refresh it, while a pid check breaks a crashed holder's lock immediately.)
 */
import { dirname } from "node:path";
import * as v from "valibot";
import { errorMessage, McpmgrError } from "../errors.ts";
import { ensureDir, errnoCode, stateIoError } from "./atomic-file.ts";
import { isOwnProcessAlive, isProcessAlive } from "./process-start.ts";

/** node:os only when a lock is taken or checked, not by every command that imports this module. */
function hostname(): string {
  return (require("node:os") as typeof import("node:os")).hostname();
}

/** node:fs/promises likewise: commands that import this module may take no lock. */
const fsp = () => import("node:fs/promises");

export interface LockOptions {
  /** How long to wait for a held lock before STATE_LOCKED (default 10 s). */
  readonly timeoutMs?: number;
  /** A lock older than this is broken even if its pid looks alive (default 60 s). */
  readonly staleMs?: number;
  /** Clock in ms since the epoch; tests pass their own. */
  readonly now?: () => number;
  /** Whether a pid on this host is alive; tests pass their own. */
  readonly isAlive?: (pid: number) => boolean;
  /**
   * Aborted (Ctrl-C): stop waiting at once. A long wait (a build lock, held for minutes) must not
   * keep a cancelled command alive until the lock frees; thrown is CANCELLED.
   */
  readonly signal?: AbortSignal;
  /** Called once, when the lock is found held by a live holder: a long wait can say why it waits. */
  readonly onWait?: () => void;
}

export interface LockHandle extends AsyncDisposable {
  readonly path: string;
  release(): Promise<void>;
}

const ownerSchema = v.object({
  pid: v.pipe(v.number(), v.integer()),
  host: v.string(),
  token: v.string(),
  createdAt: v.string(),
  /** The holder's uid (absent in locks written before it was recorded, and off POSIX). */
  uid: v.optional(v.pipe(v.number(), v.integer())),
});
type LockOwner = v.InferOutput<typeof ownerSchema>;

interface Holder {
  readonly owner: LockOwner | undefined;
  readonly raw: string;
  readonly mtimeMs: number;
}

/** A lock file we cannot parse is only ever mid-write if it came from the O_EXCL fallback; give that time. */
const UNREADABLE_GRACE_MS = 5_000;
/** The breaker file lives for microseconds; older means its owner crashed inside. */
const BREAKER_GRACE_MS = 5_000;
const MAX_DELAY_MS = 100;

/** Tokens of locks this process holds now: a lock naming our own pid but not one of these is a dead predecessor's. */
const heldTokens = new Set<string>();

export async function withLock<T>(lockPath: string, fn: () => T | Promise<T>, options: LockOptions = {}): Promise<T> {
  const lock = await acquireLock(lockPath, options);
  try {
    return await fn();
  } finally {
    await lock.release();
  }
}

export async function acquireLock(lockPath: string, options: LockOptions = {}): Promise<LockHandle> {
  const now = options.now ?? Date.now;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const deadline = now() + timeoutMs;
  const owner: LockOwner = {
    pid: process.pid,
    host: hostname(),
    token: Buffer.from(crypto.getRandomValues(new Uint8Array(12))).toString("hex"),
    createdAt: new Date(now()).toISOString(),
    ...(process.getuid ? { uid: process.getuid() } : {}),
  };
  await ensureDir(dirname(lockPath));
  // Registered before the first attempt: once link() succeeds, another async caller in this
  // process may read the file before we resume, and must not take our pid for a dead one.
  heldTokens.add(owner.token);
  let told = false;
  try {
    for (let attempt = 0; ; attempt++) {
      _throwIfCancelled(options.signal);
      if (await _tryCreate(lockPath, owner)) return _handle(lockPath, owner.token);
      const holder = await _readHolder(lockPath);
      if (holder === undefined) continue; // released between our attempt and the read: try again at once
      if (_isStale(holder, now(), options) && (await _breakStale(lockPath, holder, now()))) continue;
      const left = deadline - now();
      if (left <= 0) throw _lockedError(lockPath, holder, timeoutMs);
      if (!told) {
        told = true;
        options.onWait?.();
      }
      const backoff = Math.min(MAX_DELAY_MS, 2 * 1.5 ** attempt) * (0.5 + Math.random() / 2);
      await Bun.sleep(Math.max(1, Math.min(backoff, left)));
    }
  } catch (err) {
    heldTokens.delete(owner.token);
    throw err;
  }
}

/** Checked between attempts: a retry is at most MAX_DELAY_MS away, so no timer has to race the signal. */
function _throwIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted !== true) return;
  throw new McpmgrError("CANCELLED", `stopped waiting for a lock (${String(signal.reason)})`, { cause: signal.reason });
}

function _handle(path: string, token: string): LockHandle {
  let released = false;
  const release = async (): Promise<void> => {
    if (released) return;
    released = true;
    // The token stays "held" until the file is gone: forgotten earlier, another caller in this
    // process would take our lock for a dead predecessor's, break it and take the lock, and our
    // unlink would then delete that caller's fresh lock (two callers inside at once).
    try {
      const current = await _readHolder(path);
      if (current?.owner?.token === token) await _unlinkQuietly(path);
    } finally {
      heldTokens.delete(token);
    }
  };
  return { path, release, [Symbol.asyncDispose]: release };
}

async function _tryCreate(lockPath: string, owner: LockOwner): Promise<boolean> {
  const content = JSON.stringify(owner);
  const temp = `${lockPath}.${owner.token}.tmp`;
  try {
    await _writeExclusive(temp, content);
    try {
      await (await fsp()).link(temp, lockPath);
      return true;
    } catch (err) {
      const code = errnoCode(err);
      if (code === "EEXIST") return false;
      if (!["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EMLINK"].includes(code ?? "")) throw err;
    }
    // No hard links here (FAT, some network or FUSE mounts): plain O_EXCL; a reader may see it
    // empty for a moment, which UNREADABLE_GRACE_MS covers.
    try {
      await _writeExclusive(lockPath, content);
      return true;
    } catch (err) {
      if (errnoCode(err) === "EEXIST") return false;
      throw err;
    }
  } catch (err) {
    const code = errnoCode(err);
    throw new McpmgrError("STATE_IO", `cannot create the lock file ${lockPath}: ${errorMessage(err)}`, {
      hint:
        code === "ENOSPC" || code === "EDQUOT"
          ? "the disk is full: free some space and try again"
          : code === "EROFS"
            ? "the filesystem is read-only; point MCPMGR_HOME at a writable folder"
            : `check that ${dirname(lockPath)} is writable, or point MCPMGR_HOME at a folder you own`,
      cause: err,
    });
  } finally {
    // Never created (a read-only folder answers EROFS even for a file that is not there) or not
    // removable: either way its failure must not replace the error above, or the lock taken.
    await (await fsp()).unlink(temp).catch(() => {});
  }
}

async function _writeExclusive(path: string, content: string): Promise<void> {
  const handle = await (await fsp()).open(path, "wx", 0o600);
  try {
    await handle.writeFile(content);
  } finally {
    await handle.close();
  }
}

async function _readHolder(lockPath: string): Promise<Holder | undefined> {
  try {
    const { readFile, stat } = await fsp();
    const raw = await readFile(lockPath, "utf8");
    const { mtimeMs } = await stat(lockPath);
    let owner: LockOwner | undefined;
    try {
      const parsed = v.safeParse(ownerSchema, JSON.parse(raw));
      owner = parsed.success ? parsed.output : undefined;
    } catch {
      owner = undefined;
    }
    return { owner, raw, mtimeMs };
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return undefined;
    throw stateIoError("read the lock file", lockPath, err);
  }
}

function _isStale(holder: Holder, now: number, options: LockOptions): boolean {
  const { owner } = holder;
  if (owner === undefined) return now - holder.mtimeMs > UNREADABLE_GRACE_MS;
  const since = Date.parse(owner.createdAt);
  if (Number.isFinite(since) && now - since > (options.staleMs ?? 60_000)) return true;
  // A pid from another host (shared home on NFS) says nothing here: only age can free it.
  if (owner.host !== hostname()) return false;
  if (owner.pid === process.pid) return !heldTokens.has(owner.token);
  // Our own holder is never hidden from us (hidepid=): hidden, its pid is a stranger's since it died,
  // which may run for days while the lock (a grant's renewal, a login's port: stale after 24 h) waits.
  const ours = owner.uid !== undefined && owner.uid === process.getuid?.();
  return !(options.isAlive ?? (ours ? isOwnProcessAlive : isProcessAlive))(owner.pid);
}

/** Deletes `lockPath` if it is still exactly the stale `holder`; true when the way is clear. */
async function _breakStale(lockPath: string, holder: Holder, now: number): Promise<boolean> {
  const breaker = `${lockPath}.break`;
  try {
    await _writeExclusive(breaker, String(process.pid));
  } catch (err) {
    if (errnoCode(err) !== "EEXIST") throw err;
    const info = await (await fsp()).stat(breaker).catch(() => undefined);
    if (info !== undefined && now - info.mtimeMs > BREAKER_GRACE_MS) await _unlinkQuietly(breaker);
    return false;
  }
  try {
    const current = await _readHolder(lockPath);
    if (current !== undefined && _sameHolder(current, holder)) await _unlinkQuietly(lockPath);
    return true;
  } finally {
    await _unlinkQuietly(breaker);
  }
}

function _sameHolder(a: Holder, b: Holder): boolean {
  if (a.owner !== undefined && b.owner !== undefined) return a.owner.token === b.owner.token;
  return a.raw === b.raw && a.mtimeMs === b.mtimeMs;
}

function _lockedError(lockPath: string, holder: Holder, timeoutMs: number): McpmgrError {
  const { owner } = holder;
  // Another user's holder (a lock beside a shared AI-client file): with /proc mounted hidepid=, `ps`
  // shows none of their processes, so "if no mcpmgr is running, delete it" would have the lock of a
  // live holder deleted. It is taken from them once it is stale, which waiting and trying again sees.
  const strangers = owner?.uid !== undefined && owner.uid !== process.getuid?.();
  const who =
    owner === undefined
      ? "another process"
      : `mcpmgr process ${owner.pid}${strangers ? ` of another user (uid ${owner.uid})` : ""}${owner.host === hostname() ? "" : ` on ${owner.host}`} (since ${owner.createdAt})`;
  return new McpmgrError("STATE_LOCKED", `mcpmgr state is locked by ${who}; gave up after ${timeoutMs} ms`, {
    hint: strangers
      ? `another user's mcpmgr is changing the same file (you may not see their processes); try again in a minute, when a lock they left is taken as stale, rather than deleting ${lockPath}`
      : `another mcpmgr command is changing the same workloads; try again. If no mcpmgr is running, delete ${lockPath}`,
  });
}

async function _unlinkQuietly(path: string): Promise<void> {
  await (await fsp()).unlink(path).catch((err: unknown) => {
    if (errnoCode(err) !== "ENOENT") throw err;
  });
}
