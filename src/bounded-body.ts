/**
 * An HTTP body read whole as text, but never past a cap: a server mcpmgr talks to (an MCP
 * server's answer, a custom registry's catalog) is someone else's code, and a body without a bound
 * takes as much memory as it sends. Each caller names its own error for a body over the cap.
 * The same bound two ways: a body read whole (`readCappedText`), or passed on as a stream that
 * fails once it goes past the cap (`cappedStream`).
 */
import { Buffer } from "node:buffer";

/**
 * The length of the body as it will be read, when the server declared it: its Content-Length, unless
 * the body has a Content-Encoding (gzip, br, …), whose Content-Length counts the compressed bytes that
 * fetch expands as it reads (a few KiB of gzip can expand to gigabytes).
 */
export function declaredLength(response: Response): number | undefined {
  const declared = response.headers.get("content-length");
  if (declared === null || !/^\d+$/.test(declared)) return undefined;
  const encoding = response.headers.get("content-encoding");
  if (encoding !== null && encoding.trim().toLowerCase() !== "identity") return undefined;
  return Number(declared);
}

/**
 * The body as text, refused with `tooLarge()` past `maxBytes`. A body that says its length (the
 * usual case) is read as it is, after one compare; a chunked or encoded one is counted as it
 * arrives and cancelled (its connection dropped) the moment it passes the cap.
 */
export async function readCappedText(response: Response, maxBytes: number, tooLarge: () => Error): Promise<string> {
  const declared = declaredLength(response);
  if (declared !== undefined) {
    if (declared > maxBytes) {
      void response.body?.cancel().catch(() => {});
      throw tooLarge();
    }
    return response.text();
  }
  const body = response.body;
  if (body === null) return "";
  const parts: Uint8Array[] = [];
  let total = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      void reader.cancel().catch(() => {});
      throw tooLarge();
    }
    parts.push(value);
  }
  // TextDecoder, like response.text(), drops a leading byte-order mark.
  return new TextDecoder().decode(Buffer.concat(parts, total));
}

/**
 * A stream stage that passes a body on while counting it, and errors with `tooLarge()` (its consumer's
 * read fails) once more than `maxBytes` went through. A body whose `declared` length is already over
 * the cap fails at its first chunk: nothing is read before the consumer reads, so one that only wants
 * the status can cancel the body unread.
 */
export function cappedStream(
  maxBytes: number,
  declared: number | undefined,
  tooLarge: () => Error,
): TransformStream<Uint8Array, Uint8Array> {
  let total = declared !== undefined && declared > maxBytes ? maxBytes : 0;
  return new TransformStream({
    transform(chunk, controller) {
      total += chunk.byteLength;
      if (total > maxBytes) controller.error(tooLarge());
      else controller.enqueue(chunk);
    },
  });
}
