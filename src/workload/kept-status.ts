/**
 * The status a running supervisor records (`running`, `restarting`), kept trying when it cannot be
 * written: a full disk or a status folder made read-only must not end a workload that serves, or
 * stop it restarting its server (the write failing threw out of the restart loop, and the
 * supervisor exited). The latest status is written again every `retryMs` until it is on disk or a
 * newer one replaces it; the log says once why, and once that it was written after all. The writes
 * are one after the other, so an older status retried never lands after a newer one.
 */
import { errorMessage, isMcpmgrError } from "../errors.ts";
import type { WorkloadLog } from "./context.ts";

export const STATUS_RETRY_MS = 2_000;

export function keptStatusReporter<S>(
  name: string,
  write: (status: S) => Promise<unknown>,
  log: WorkloadLog,
  retryMs = STATUS_RETRY_MS,
): { report: (status: S) => Promise<void>; close: () => void } {
  let latest: S | undefined;
  let failing = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let chain: Promise<void> = Promise.resolve();
  let closed = false;
  const attempt = (status: S): Promise<void> => {
    chain = chain.then(async () => {
      if (closed || status !== latest) return;
      try {
        await write(status);
      } catch (err) {
        if (!failing) {
          const hint = isMcpmgrError(err) && err.hint ? ` (hint: ${err.hint})` : "";
          log.warn(
            `${name}: its status cannot be recorded: ${errorMessage(err)}${hint}; it keeps serving and tries again`,
          );
        }
        failing = true;
        clearTimeout(timer);
        timer = setTimeout(() => void attempt(status), retryMs);
        timer.unref?.();
        return;
      }
      if (failing) log.info(`${name}: its status is recorded again`);
      failing = false;
    });
    return chain;
  };
  return {
    report: (status) => {
      latest = status;
      clearTimeout(timer);
      return attempt(status);
    },
    close: () => {
      closed = true;
      clearTimeout(timer);
    },
  };
}
