/**
 * A started server's output, kept for the workload log, error reports and --debug (secret
 * values redacted), and the reason it gave when it exited on its own.
 */
import { printable } from "../printable.ts";
import type { ServerHandle } from "../runtime/server-handle.ts";
import type { WorkloadLog } from "./context.ts";

export interface KeptOutput {
  /** The last lines, for an error report. */
  tail(): string;
  /** Resolves once the streams have ended. */
  readonly drained: Promise<void>;
}

/** Its stderr, and its stdout too for HTTP servers (where stdout is not the protocol). */
export function keepOutput(
  server: ServerHandle,
  name: string,
  log: WorkloadLog,
  onOutput: ((text: string) => void) | undefined,
  includeStdout: boolean,
): KeptOutput {
  let tail = "";
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    let partial = "";
    const emit = (raw: string) => {
      // Whole lines only, so a secret split across two reads is still recognised; control
      // characters escaped, so the server cannot act on the terminal of whoever reads its log.
      const text = printable(server.redact(raw));
      onOutput?.(text);
      tail = (tail + text).slice(-4_000);
      for (const line of text.split("\n")) if (line.trim() !== "") log.debug(`${name} stderr: ${line}`);
    };
    for await (const chunk of stream) {
      // Only the new text is searched for a line end, and a line that never ends is written in
      // pieces: a server that prints without newlines cannot grow this process or make it spin.
      const text = decoder.decode(chunk, { stream: true });
      const end = text.lastIndexOf("\n");
      if (end === -1) partial += text;
      else {
        emit(partial + text.slice(0, end + 1));
        partial = text.slice(end + 1);
      }
      while (partial.length > MAX_LINE_CHARS) {
        const cut = cutOutsideSecrets(partial, server.redact);
        emit(`${partial.slice(0, cut)}\n`);
        partial = partial.slice(cut);
      }
    }
    if (partial !== "") emit(partial);
  };
  const drained = Promise.all([drain(server.stderr), includeStdout ? drain(server.stdout) : undefined]).then(() => {});
  return { tail: () => tail.trim().split("\n").slice(-10).join("\n"), drained };
}

/**
 * What comes before a stdio server's stray stdout line quoted in mcpmgr's warning (upstream-stdio.ts):
 * the start relay reads no marker of its own warnings after it, where a server could word one.
 */
export const STRAY_STDOUT_QUOTE = "skipped a non-JSON line on stdout: ";

/** The longest piece of a server's output line held before it is written without its end. */
export const MAX_LINE_CHARS = 64 * 1024;
/** What stays held after a cut, so a secret near the cut can still be seen whole. */
const HELD_AFTER_CUT = 8 * 1024;

/**
 * Where to cut a long line so no secret value lies across the cut: a cut is safe when redacting the
 * two pieces gives what redacting the whole does. Where a value lies across it, the first piece's
 * redaction departs from the whole's where that value begins (what follows in the piece is its head,
 * unredacted), so the next try is there: a value repeated end to end is cut between two copies.
 * Never inside a character of two UTF-16 units. When no cut is safe, nothing is held back.
 */
function cutOutsideSecrets(text: string, redact: (text: string) => string): number {
  const whole = redact(text);
  let cut = text.length - HELD_AFTER_CUT;
  for (let tries = 0; tries < MAX_CUT_TRIES && cut > 0; tries += 1) {
    if (isLowSurrogate(text.charCodeAt(cut))) cut -= 1;
    const head = redact(text.slice(0, cut));
    if (head + redact(text.slice(cut)) === whole) return cut;
    cut -= Math.max(1, head.length - commonPrefixLength(head, whole));
  }
  return text.length;
}

/** Enough for values that overlap each other; a cut found is usually the first or second try. */
const MAX_CUT_TRIES = 64;

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function commonPrefixLength(a: string, b: string): number {
  let at = 0;
  while (at < a.length && a.charCodeAt(at) === b.charCodeAt(at)) at += 1;
  return at;
}

/** What separates the exit reason from the server's last output in `exitReason`'s text. */
export const LAST_OUTPUT = "; its last output:";

/** Why the server stopped, with its last words (waited for briefly: its streams end after it does). */
export function exitReason(server: ServerHandle, output: KeptOutput): Promise<string> {
  return server.exited.then(async (code) => {
    await Promise.race([output.drained, Bun.sleep(500)]);
    const tail = output.tail();
    return `the MCP server exited with code ${code}${tail ? `${LAST_OUTPUT}\n${tail}` : ""}`;
  });
}

/** How much of one log message goes into the workload log. */
const LOG_MESSAGE_CHARS = 4_000;

/**
 * A server's MCP log message (`notifications/message`) that no client took (stdio-bridge/
 * server-routing.ts), as one line of its workload log: `[mcp log LEVEL] LOGGER: DATA`, DATA as text
 * or JSON, secret values redacted, control characters escaped, line breaks kept out, long data cut.
 */
export function unroutedLogLine(server: ServerHandle, params: Record<string, unknown> | undefined): string {
  const data = params?.data;
  const text = typeof data === "string" ? data : (JSON.stringify(data) ?? "");
  const logger = typeof params?.logger === "string" ? `${params.logger}: ` : "";
  const head = `[mcp log ${String(params?.level)}] ${logger}`;
  // Redacted whole, then cut: a cut first left the head of a value that lay across it in clear.
  const whole = server.redact(`${head}${text}`);
  const limit = head.length + LOG_MESSAGE_CHARS;
  const line = whole.length > limit ? `${whole.slice(0, limit)}…` : whole;
  return `${printable(line).replace(/\n/g, "\\n")}\n`;
}
