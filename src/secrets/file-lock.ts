/**
 * A small exclusive lock for read-modify-write of one file: `<file>.lock` created with
 * O_EXCL. Two `mcpmgr secret set` running at once must not lose one of the writes.
 * A lock older than `staleMs` is taken to belong to a process that died mid-write.
 * (To be replaced by the shared lock in state/ once that lands.)
 */
import { open, stat, unlink } from "node:fs/promises";
import { McpmgrError } from "../errors.ts";

export interface FileLockOptions {
  readonly timeoutMs?: number;
  readonly staleMs?: number;
  readonly now?: () => number;
}

export async function withFileLock<T>(file: string, fn: () => Promise<T>, options: FileLockOptions = {}): Promise<T> {
  const lockPath = `${file}.lock`;
  const now = options.now ?? Date.now;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const staleMs = options.staleMs ?? 30_000;
  const deadline = now() + timeoutMs;
  for (let delay = 5; ; delay = Math.min(delay * 2, 50)) {
    try {
      const handle = await open(lockPath, "wx", 0o600);
      try {
        await handle.writeFile(`${process.pid}\n`);
      } catch (err) {
        // Created but not written (a full disk): ours all the same, and left behind it would hold
        // off every `secret` command for `staleMs` once there is space again.
        await handle.close().catch(() => {});
        await unlink(lockPath).catch(() => {});
        throw err;
      }
      await handle.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST")
        throw storeFailed(`cannot create the lock file ${lockPath}`, err);
    }
    const age = await stat(lockPath).then(
      (s) => now() - s.mtimeMs,
      () => undefined,
    );
    if (age !== undefined && age > staleMs) {
      await unlink(lockPath).catch(() => {});
      continue;
    }
    if (now() >= deadline) {
      throw new McpmgrError(
        "SECRETS_STORE_FAILED",
        `the secrets file is locked by another mcpmgr process (${lockPath})`,
        {
          hint: `try again; if no other mcpmgr is running, delete ${lockPath}`,
        },
      );
    }
    await Bun.sleep(delay + Math.random() * delay); // jitter, so waiters do not retry in lockstep
  }
  try {
    return await fn();
  } finally {
    await unlink(lockPath).catch(() => {});
  }
}

export function storeFailed(message: string, cause: unknown): McpmgrError {
  const detail = (cause as NodeJS.ErrnoException | undefined)?.code;
  return new McpmgrError("SECRETS_STORE_FAILED", detail ? `${message}: ${detail}` : message, {
    hint:
      detail === "ENOSPC" || detail === "EDQUOT"
        ? "the disk is full: free some space and try again"
        : detail === "EROFS"
          ? "the filesystem is read-only; point MCPMGR_HOME at a writable folder"
          : "check that the directory exists and belongs to you (see MCPMGR_HOME)",
    cause,
  });
}
