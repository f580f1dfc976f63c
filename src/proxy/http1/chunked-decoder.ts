/**
 * A request body in chunked transfer coding (RFC 9112 §7.1), decoded as bytes arrive, in
 * whatever pieces they arrive. Strict: a chunk size is hex digits only (no sign, no
 * whitespace, at most 16 of them), every line ends in CRLF, chunk extensions are skipped
 * but must be visible characters, and trailer fields are read and dropped within a bound.
 * Anything else is a ChunkedBodyError: the connection cannot be trusted to find the next
 * request, so the caller answers 400 and closes it.
 */
import type { Buffer } from "node:buffer";

export class ChunkedBodyError extends Error {}

const cr = 0x0d;
const lf = 0x0a;
/** A size line (size and extensions) or a trailer line longer than this is refused. */
const maxLineBytes = 4096;
const maxTrailerBytes = 16 * 1024;

type State = "size" | "size-lf" | "data" | "data-cr" | "data-lf" | "trailer" | "trailer-lf" | "done";

export class ChunkedDecoder {
  #state: State = "size";
  /** The size line so far (digits and extensions, as latin1). */
  #line = "";
  #remaining = 0;
  #trailerBytes = 0;
  #lineIsEmpty = true;
  #total = 0;
  readonly #maxBodyBytes: number;

  constructor(maxBodyBytes: number) {
    this.#maxBodyBytes = maxBodyBytes;
  }

  get done(): boolean {
    return this.#state === "done";
  }

  /**
   * Decodes `input`, handing body bytes to `onData`; returns how many bytes of `input` were
   * consumed (less than all only once the body ended: the rest is the next request).
   */
  push(input: Buffer, onData: (bytes: Buffer) => void): number {
    let i = 0;
    const n = input.length;
    while (i < n) {
      switch (this.#state) {
        case "data": {
          const take = Math.min(this.#remaining, n - i);
          onData(input.subarray(i, i + take));
          i += take;
          this.#remaining -= take;
          if (this.#remaining === 0) this.#state = "data-cr";
          break;
        }
        case "size": {
          const c = input[i++] as number;
          if (c === cr) this.#state = "size-lf";
          else if (c === lf) throw new ChunkedBodyError("bare LF in a chunk size line");
          else {
            if (this.#line.length >= maxLineBytes) throw new ChunkedBodyError("chunk size line too long");
            this.#line += String.fromCharCode(c);
          }
          break;
        }
        case "size-lf": {
          if (input[i++] !== lf) throw new ChunkedBodyError("bare CR in a chunk size line");
          const size = chunkSize(this.#line);
          this.#line = "";
          this.#total += size;
          if (this.#total > this.#maxBodyBytes) throw new ChunkedBodyError("request body too large");
          if (size === 0) {
            this.#state = "trailer";
            this.#lineIsEmpty = true;
          } else {
            this.#remaining = size;
            this.#state = "data";
          }
          break;
        }
        case "data-cr":
          if (input[i++] !== cr) throw new ChunkedBodyError("chunk data longer than its size");
          this.#state = "data-lf";
          break;
        case "data-lf":
          if (input[i++] !== lf) throw new ChunkedBodyError("chunk data not followed by CRLF");
          this.#state = "size";
          break;
        case "trailer": {
          const c = input[i++] as number;
          if (++this.#trailerBytes > maxTrailerBytes) throw new ChunkedBodyError("trailer section too large");
          if (c === cr) this.#state = "trailer-lf";
          else if (c === lf) throw new ChunkedBodyError("bare LF in the trailer section");
          else if ((c < 0x20 && c !== 0x09) || c === 0x7f) throw new ChunkedBodyError("control character in a trailer");
          else this.#lineIsEmpty = false;
          break;
        }
        case "trailer-lf": {
          if (input[i++] !== lf) throw new ChunkedBodyError("bare CR in the trailer section");
          if (this.#lineIsEmpty) {
            this.#state = "done";
            return i;
          }
          this.#lineIsEmpty = true;
          this.#state = "trailer";
          break;
        }
        case "done":
          return i;
      }
    }
    return i;
  }
}

const hex = /^[0-9A-Fa-f]{1,16}$/;
const extension = /^[\x21-\x7e\x09\x20]*$/;

function chunkSize(line: string): number {
  const semicolon = line.indexOf(";");
  const digits = semicolon === -1 ? line : line.slice(0, semicolon);
  if (!hex.test(digits)) throw new ChunkedBodyError("invalid chunk size");
  if (semicolon !== -1 && !extension.test(line.slice(semicolon + 1))) {
    throw new ChunkedBodyError("invalid chunk extension");
  }
  const size = Number.parseInt(digits, 16);
  if (!Number.isSafeInteger(size)) throw new ChunkedBodyError("chunk size too large");
  return size;
}
