/** `mcpmgr secret set`'s value when it is piped in: bounded, UTF-8 only, never echoed anywhere. */
import { McpmgrError } from "../errors.ts";

/** The largest value `secret set` accepts on stdin. */
const MAX_VALUE_BYTES = 1024 * 1024;

/**
 * A piped secret value: all of `stream`, UTF-8, without the one trailing newline that `echo` and
 * here-strings add. The bytes read are zeroed once decoded; a closed stream reads as "".
 */
export async function readSecretText(stream: AsyncIterable<Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of stream) {
      size += chunk.byteLength;
      if (size > MAX_VALUE_BYTES) {
        throw new McpmgrError("INVALID_ARGUMENT", "the value on stdin is larger than 1 MiB", {
          hint: "store a path to a file instead of its contents",
        });
      }
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof McpmgrError) throw err;
    return ""; // a closed stdin reads as no value
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new McpmgrError("INVALID_ARGUMENT", "the value on stdin is not UTF-8 text", {
      hint: "base64-encode binary values before storing them",
    });
  } finally {
    for (const chunk of chunks) chunk.fill(0);
  }
  return text.replace(/\r?\n$/, "");
}
