/**
 * Where audit lines go: the configured logFile (appended, mode 0600), else the workload's
 * log (detached) or stderr (foreground). File writes are buffered in a Bun FileSink and
 * flushed every 200 ms and on close: a write per event through a Node stream cost about a
 * tenth of the proxy's CPU per request. A crash can lose at most the last 200 ms of lines.
 */
import { closeSync, openSync } from "node:fs";
import type { AuditConfig } from "../config/audit-config.ts";
import { errorMessage, McpmgrError } from "../errors.ts";

export interface AuditSink {
  readonly write: (line: string) => void;
  close(): Promise<void>;
}

const FLUSH_EVERY_MS = 200;

/** Opens the log for appending: an audit log that cannot be written would lose every line, so that is a start-up error. */
function openForAppend(path: string): number {
  try {
    return openSync(path, "a", 0o600);
  } catch (err) {
    throw new McpmgrError(
      "INVALID_OPTION",
      `audit logFile ${path} cannot be written: ${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}`,
      {
        hint: "point logFile at a writable file, or leave it out to write audit lines to the workload's log",
      },
    );
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
  const fd = openForAppend(path);
  const sink = Bun.file(fd).writer({ highWaterMark: 64 * 1024 });
  let pending = false;
  const flush = async () => {
    if (!pending) return;
    pending = false;
    try {
      await sink.flush();
    } catch (err) {
      onError(`audit log ${path}: ${errorMessage(err)}`);
    }
  };
  const timer = setInterval(() => void flush(), FLUSH_EVERY_MS);
  timer.unref();
  return {
    write(line) {
      sink.write(line);
      pending = true;
    },
    async close() {
      clearInterval(timer);
      pending = true;
      await flush();
      await sink.end();
      try {
        closeSync(fd);
      } catch {
        // already closed with the sink
      }
    },
  };
}
