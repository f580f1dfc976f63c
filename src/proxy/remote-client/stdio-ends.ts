/**
 * The stdio client's side of `proxy stdio` (stdio-relay.ts): a problem with its input worded in one line,
 * and its last answers written out before the relay ends.
 */
import type { Writable } from "node:stream";
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
