/**
 * The stdio client's side of `proxy stdio` (stdio-relay.ts): a problem with its input worded in one line,
 * its last answers written out before the relay ends, and what the ends of its streams mean for the relay.
 */
import type { Readable, Writable } from "node:stream";
import type { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { errorMessage } from "../../errors.ts";

export const firstLine = (err: unknown): string => errorMessage(err).split("\n")[0] ?? "";

/**
 * The last answers written out, or failed (their write's error is emitted after it): waited for while
 * the stream holds them, for a second at most (a client that stopped reading), then a turn of the loop.
 */
export async function writtenOut(stdout: Writable): Promise<void> {
  if (stdout.writableNeedDrain) {
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => {
      settle = resolve;
    });
    stdout.once("drain", settle);
    stdout.once("error", settle);
    await Promise.race([settled, Bun.sleep(1_000)]);
    stdout.off("drain", settle);
    stdout.off("error", settle);
  }
  await new Promise((resolve) => setImmediate(resolve));
}

/**
 * One line for a problem the transport reports with the input, worded for what it is. The SDK
 * reports JSON that is not a JSON-RPC message with its schema library's whole issue list (forty
 * lines of JSON for a `[]`); the client's log (Claude Desktop's) needs to know only that the line
 * was skipped, and why. A line past the transport's buffer ends the input; anything else (thrown
 * while a message was handled) is said as it is, not as a skipped line.
 */
export function inputProblem(err: Error): string {
  if (Array.isArray((err as { issues?: unknown }).issues)) return "skipped a line that is not a JSON-RPC message";
  if (err instanceof SyntaxError) return `skipped a line that is not JSON: ${firstLine(err)}`;
  const tooLong = /^ReadBuffer exceeded maximum size of (\d+) bytes/.exec(err.message);
  if (tooLong) return `a line longer than ${tooLong[1]} bytes: no more input is read`;
  return firstLine(err);
}

export interface ClientEnds {
  readonly stdin: Readable;
  readonly stdout: Writable;
  readonly local: StdioServerTransport;
  readonly log: { warn(text: string): void };
  /** The input is over (why, when it failed): the relay drains, then ends. */
  inputEnded(why?: string): void;
  /** The client's output is gone: the relay ends (having failed, why, unless the client just went away). */
  outputFailed(why?: string): void;
}

export function watchClientEnds(ends: ClientEnds): void {
  // The transport reports a read error of stdin itself as it reports a bad line: told apart by the object.
  const readErrors = new WeakSet<Error>();
  ends.local.onerror = (err) => {
    if (!readErrors.has(err)) ends.log.warn(`stdin: ${inputProblem(err)}`);
  };
  ends.local.onclose = () => ends.inputEnded();
  ends.stdin.once("end", () => ends.inputEnded());
  // A stream that failed gives nothing more: the input is over, and the relay failed.
  ends.stdin.once("error", (err: Error) => {
    readErrors.add(err);
    ends.inputEnded(`stdin: cannot be read: ${firstLine(err)}`);
  });
  // The client's stdout: gone (EPIPE) is the client gone, the relay's end; any other failure (ENOSPC, EIO)
  // leaves the client without its answers, so the relay fails, saying so, instead of relaying into nothing.
  ends.stdout.on("error", (err: Error & { code?: unknown }) => {
    ends.outputFailed(
      err.code === "EPIPE"
        ? undefined
        : `cannot write to the client on stdout: ${typeof err.code === "string" ? err.code : firstLine(err)} (hint: give proxy stdio a stdout that can be written, as an AI client does)`,
    );
  });
}
