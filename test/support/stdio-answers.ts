/**
 * The answers a stdio relay writes to its client (one JSON-RPC message a line), by id, as they come:
 * for tests that drive `startStdioRelay` in-process on a PassThrough.
 */
import type { Readable } from "node:stream";

export function answersOf<T extends { id?: unknown }>(stdout: Readable): Map<unknown, T> {
  const answers = new Map<unknown, T>();
  let buffered = "";
  stdout.on("data", (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
      const message = JSON.parse(buffered.slice(0, end)) as T;
      buffered = buffered.slice(end + 1);
      if (message.id !== undefined) answers.set(message.id, message);
    }
  });
  return answers;
}
