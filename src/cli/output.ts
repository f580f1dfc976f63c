/**
 * Terminal output. Logs go to stderr through consola; stdout carries only what a
 * script may want to capture (the URL clients should use).
 */
import { createConsola } from "consola/basic";
import { isMcpmgrError } from "../errors.ts";
import { printable } from "../printable.ts";

// An explicit level: consola would otherwise go quiet whenever NODE_ENV=test is inherited.
export const log = createConsola({
  level: 3,
  stdout: process.stderr,
  stderr: process.stderr,
  formatOptions: { date: false },
});
// Log lines carry text from outside (a server's output, a remote's error): never raw control characters.
log.setReporters(
  log.options.reporters.map((reporter) => ({
    log: (entry, context) =>
      reporter.log(
        { ...entry, args: entry.args.map((arg) => (typeof arg === "string" ? printable(arg) : arg)) },
        context,
      ),
  })),
);

export function enableDebug(): void {
  log.level = 4;
}

export function printResult(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** One line for the error and its hint; the cause chain only with --debug. Returns the exit code. */
export function reportError(err: unknown): number {
  if (isMcpmgrError(err)) {
    log.error(err.hint ? `${err.message} (hint: ${err.hint})` : err.message);
    if (log.level >= 4 && err.cause !== undefined) log.debug(err.cause);
    return err.exitCode;
  }
  const message = err instanceof Error ? err.message : String(err);
  log.error(`unexpected error: ${message} (hint: run again with --debug and report it if it persists)`);
  if (log.level >= 4) log.debug(err);
  return 1;
}

/** Columns padded to their widest cell, on stdout; the last column is not padded. */
export function printTable(header: readonly string[], rows: readonly (readonly string[])[]): void {
  const lines = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...lines.map((line) => (line[i] ?? "").length)));
  for (const line of lines) {
    printResult(
      line
        .map((cell, i) => cell.padEnd(widths[i] as number))
        .join("  ")
        .trimEnd(),
    );
  }
}
