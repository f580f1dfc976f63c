/**
 * Terminal output. Logs go to stderr in consola's basic format ("[info] message"), through consola's
 * core only for a line with an object or an error; stdout carries only what a script may want to
 * capture (the URL clients should use).
 *
 * Start-up cost matters here: this module is loaded by every command. consola is created
 * on the first log line that is not plain text, never touches Node's stdout/stderr streams (several ms that
 * `--version` or `list` would otherwise pay), and results go out with write(2) on descriptor 1, synchronously
 * and completely (a non-blocking pipe waited for), so that a write that fails is known: console.log drops
 * the error, and `registry list > /dev/full` exited 0 having written nothing.
 */
import type { ConsolaInstance, ConsolaReporter } from "consola";
import { errorMessage, isMcpmgrError, McpmgrError } from "../errors.ts";
import { printable } from "../printable.ts";

/** consola's numeric levels for the calls we make. */
const levels = { error: 0, warn: 1, info: 3, success: 3, debug: 4 } as const;
type Level = keyof typeof levels;

// An explicit level: consola would otherwise go quiet whenever NODE_ENV=test is inherited.
let level = 3;
/** Log lines start with the time (UTC, ISO 8601): a supervisor's, read in its log long after (stampLogTimes). */
let stamped = false;
let consola: ConsolaInstance | undefined;

/**
 * consola's core (levels, throttling of repeated lines) with a reporter of our own that writes
 * consola's basic format ("[info] message") through console.warn. Not consola/basic: loading it
 * creates a default instance, and with it Node's process.stdout/process.stderr streams (node:stream,
 * fs streams, events: ~1.7 ms of every command that logs a line with an object or an error).
 * console.warn writes to stderr synchronously and completely, in order with the results (printResult); not
 * console.error, which Bun colours red on a terminal (every [info] and [success] line read as an error).
 */
const stderrReporter: ConsolaReporter = {
  log(logObj) {
    writeLine(logObj.type, logObj.args, logObj.date, logObj.tag);
  },
};

/** One log line in consola's basic format, on stderr. */
function writeLine(type: string, args: readonly unknown[], date: Date, tag = ""): void {
  const [first, ...rest] = args;
  const message = typeof first === "string" && rest.length === 0 ? first : formatArgs(args);
  const time = stamped ? date.toISOString() : "";
  console.warn([time, `[${type}]`, tag ? `[${tag}]` : "", message].filter(Boolean).join(" "));
}

/** Several values or a non-string (a debug line with an error or an object): as console.log would show them. */
function formatArgs(args: readonly unknown[]): string {
  const { formatWithOptions } = require("node:util") as typeof import("node:util");
  return formatWithOptions({}, ...args.map((arg) => (arg instanceof Error ? errorWithCauses(arg) : arg)));
}

function errorWithCauses(err: Error, depth = 0): string {
  const text = err.stack ?? `${err.name}: ${err.message}`;
  const cause = err.cause instanceof Error && depth < 8 ? `\n[cause]: ${errorWithCauses(err.cause, depth + 1)}` : "";
  return text + cause;
}

function instance(): ConsolaInstance {
  if (consola === undefined) {
    // require, not import(): logging is synchronous. The bundle makes it a chunk loaded on this call.
    const { createConsola } = require("consola/core") as typeof import("consola/core");
    // No throttle: consola holds back a line repeated within a second (the sixth "NAME running at URL" of a
    // restarting supervisor), then prints a merged one, or the line before it again with its old time. A log
    // read after the fact must hold every line as it was written. (No minimum either: a clock set back
    // would otherwise bring the throttle back.)
    consola = createConsola({
      level,
      reporters: [stderrReporter],
      formatOptions: { date: false },
      throttle: 0,
      throttleMin: Number.POSITIVE_INFINITY,
    });
  }
  return consola;
}

function at(type: Level): (...args: unknown[]) => void {
  return (...args) => {
    if (levels[type] > level) return;
    // Log lines carry text from outside (a server's output, a remote's error): never raw control characters.
    const safe = args.map((arg) => (typeof arg === "string" ? printable(arg) : arg)) as [unknown, ...unknown[]];
    // Text alone, nearly every line: consola's core would hand it to the reporter unchanged (no tag, no
    // throttle), so it is written here and consola is not loaded (about 0.3 ms of an empty `mcpmgr list`,
    // bench `cli-startup`). An object or an error goes through consola, which shapes some of them itself.
    if (safe.every((arg) => typeof arg === "string")) writeLine(type, safe, new Date());
    else instance()[type](...safe);
  };
}

export const log = {
  get level(): number {
    return level;
  },
  set level(value: number) {
    level = value;
    if (consola !== undefined) consola.level = value;
  },
  error: at("error"),
  warn: at("warn"),
  info: at("info"),
  success: at("success"),
  debug: at("debug"),
};

export function enableDebug(): void {
  log.level = 4;
}

/**
 * From now on every log line starts with its time. For a detached supervisor, whose log is read
 * after the fact (when did it crash, restart, fail to restart?); a terminal's lines need none.
 */
export function stampLogTimes(): void {
  stamped = true;
}

/** stdout's reader is gone (EPIPE: `mcpmgr list | head -1`): nothing more is written, and nothing went wrong. */
let stdoutGone = false;
/** A write to stdout failed otherwise (ENOSPC, EIO): said once, the command exits 1, nothing more is written. */
let stdoutFailed = false;
/** Where results go instead of stdout (a supervisor's: its capped proxy log). */
let resultSink: ((text: string) => void) | undefined;

/** From now on results go to `write`, not to stdout (a detached supervisor: its proxy log). */
export function sendResultsTo(write: (text: string) => void): void {
  resultSink = write;
}

const failures: Readonly<Record<string, string>> = {
  ENOSPC: "no space left on the device",
  EIO: "an input/output error",
  EBADF: "it is closed",
  EFBIG: "the file is too large",
  EDQUOT: "the disk quota is used up",
};

/**
 * All of `data` written to descriptor `fd`, waiting while a non-blocking pipe is full. False when the
 * reader is gone (EPIPE); any other failure is an OUTPUT_FAILED error naming it.
 */
export function writeWhole(fd: number, data: string | Uint8Array): boolean {
  const { writeSync } = require("node:fs") as typeof import("node:fs");
  let rest = typeof data === "string" ? Buffer.from(data) : data;
  // A stalled reader is waited for with a growing pause (1 ms up to 50 ms), not polled a thousand times a second.
  let pause = 1;
  while (rest.byteLength > 0) {
    try {
      rest = rest.subarray(writeSync(fd, rest));
      pause = 1;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code === "EAGAIN") {
        Bun.sleepSync(pause);
        pause = Math.min(pause * 2, 50);
        continue;
      }
      if (code === "EPIPE") return false;
      const why =
        typeof code === "string" ? `${failures[code] ?? "the system refused it"} (${code})` : errorMessage(err);
      throw new McpmgrError("OUTPUT_FAILED", `cannot write the output to stdout: ${why}`, {
        hint: "send the output where it can be written (make room, or redirect it elsewhere)",
        cause: err,
      });
    }
  }
  return true;
}

/**
 * `data` on stdout: false once its reader is gone (EPIPE), the command's cue to stop writing; throws
 * OUTPUT_FAILED on any other failure (ENOSPC, EIO).
 */
export function writeStdout(data: string | Uint8Array): boolean {
  if (stdoutGone) return false;
  if (writeWhole(1, data)) return true;
  stdoutGone = true;
  return false;
}

/**
 * A line of a command's result on stdout. Never throws: a command may have started something that a throw
 * would leave behind (a foreground run prints its URL, then serves). A failed write is said at once, in one
 * line, and the command exits 1 when it ends; a reader gone (EPIPE) is not an error.
 */
export function printResult(line: string): void {
  if (resultSink !== undefined) return resultSink(`${line}\n`);
  if (stdoutFailed) return;
  try {
    writeStdout(`${line}\n`);
  } catch (err) {
    stdoutFailed = true;
    process.exitCode = reportError(err);
  }
}

/** One line for the error and its hint; the cause chain only with --debug. Returns the exit code. */
export function reportError(err: unknown): number {
  if (isMcpmgrError(err)) {
    const line = err.hint ? `${err.message} (hint: ${err.hint})` : err.message;
    const details = err.details?.split("\n").filter((text) => text.trim() !== "");
    log.error(details?.length ? `${line}\n${details.map((text) => `  ${text}`).join("\n")}` : line);
    if (log.level >= 4 && err.cause !== undefined) log.debug(err.cause);
    return err.exitCode;
  }
  const message = errorMessage(err);
  // Under --debug the details follow at once: no advice to run again with it.
  const debugging = log.level >= 4;
  log.error(
    `unexpected error: ${message} (hint: ${debugging ? "report it with the details below if it persists" : "run again with --debug and report it if it persists"})`,
  );
  if (debugging) log.debug(err);
  return 1;
}

/**
 * Lines of a result, on stdout in one write: to a pipe or a file each write is a system call,
 * two dozen of them for `registry list` (bench `cli-startup`).
 */
export function printLines(lines: readonly string[]): void {
  if (lines.length > 0) printResult(lines.join("\n"));
}

/** Columns padded to their widest cell, on stdout; the last column is not padded. */
export function printTable(header: readonly string[], rows: readonly (readonly string[])[]): void {
  const lines = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...lines.map((line) => (line[i] ?? "").length)));
  printLines(
    lines.map((line) =>
      line
        .map((cell, i) => cell.padEnd(widths[i] as number))
        .join("  ")
        .trimEnd(),
    ),
  );
}
