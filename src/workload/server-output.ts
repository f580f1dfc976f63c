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

/** The longest piece of a server's output line held before it is written without its end. */
export const MAX_LINE_CHARS = 64 * 1024;
/** What stays held after a cut, so a secret near the cut can still be seen whole. */
const HELD_AFTER_CUT = 8 * 1024;

/**
 * Where to cut a long line so no secret value lies across the cut: a cut is safe when redacting the
 * two pieces gives what redacting the whole does. Without secrets the first candidate is taken.
 */
function cutOutsideSecrets(text: string, redact: (text: string) => string): number {
  const whole = redact(text);
  let cut = text.length - HELD_AFTER_CUT;
  while (cut > HELD_AFTER_CUT && redact(text.slice(0, cut)) + redact(text.slice(cut)) !== whole) cut -= 251;
  return cut;
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
  const line = `[mcp log ${String(params?.level)}] ${logger}${text.length > LOG_MESSAGE_CHARS ? `${text.slice(0, LOG_MESSAGE_CHARS)}…` : text}`;
  return `${printable(server.redact(line)).replace(/\n/g, "\\n")}\n`;
}
