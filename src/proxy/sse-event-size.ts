/**
 * The size of each event of an SSE stream, measured on the raw bytes without parsing them: the bytes
 * since the last blank line (the line ending that follows another line ending, or the stream's start).
 * A bounded fetch (answer-limit.ts) uses it to cut an event that grows past MCPMGR_MAX_MESSAGE_BYTES
 * while the client library parses the stream itself: the bound costs a search for line endings
 * (`indexOf`, native) per chunk, not a second SSE parse. It says where in the chunk that event began,
 * so the whole events before it still pass.
 *
 * Line endings are LF, CRLF and CR, as the SSE format allows; a CRLF split across two chunks is one
 * line ending, so `\r` | `\n` is not taken for a blank line.
 */

const LF = 0x0a;
const CR = 0x0d;

export class SseEventSize {
  readonly #maxBytes: number;
  /** Bytes of the event in progress seen in earlier chunks. */
  #carried = 0;
  /** The last byte seen ended a line (or nothing was seen yet): a line ending next is a blank line. */
  #atLineStart = true;
  /** The last byte seen was a CR: an LF right after it belongs to the same line ending. */
  #afterCr = false;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /**
   * Takes the stream's next chunk. -1 while its events (ended or still open) are within the bound;
   * else where in the chunk the first event past it begins: the bytes before are whole events, and 0
   * means that event began in an earlier chunk.
   */
  oversizedFrom(chunk: Uint8Array): number {
    const length = chunk.byteLength;
    let position = 0;
    /** Where the event in progress began in this chunk; -1 while it began in an earlier one. */
    let eventStart = -1;
    let nextCr = chunk.indexOf(CR);
    let nextLf = chunk.indexOf(LF);
    while (position < length) {
      if (nextCr !== -1 && nextCr < position) nextCr = chunk.indexOf(CR, position);
      if (nextLf !== -1 && nextLf < position) nextLf = chunk.indexOf(LF, position);
      const end = nextCr === -1 ? nextLf : nextLf === -1 ? nextCr : Math.min(nextCr, nextLf);
      if (end === -1) {
        this.#atLineStart = false;
        this.#afterCr = false;
        break;
      }
      if (end > position) {
        this.#atLineStart = false;
        this.#afterCr = false;
      }
      const isLf = chunk[end] === LF;
      position = end + 1;
      if (isLf && this.#afterCr) {
        // The LF of a CRLF: the line ending was counted at its CR.
        this.#afterCr = false;
        continue;
      }
      this.#afterCr = !isLf;
      if (!this.#atLineStart) {
        this.#atLineStart = true;
        continue;
      }
      // A blank line: the event in progress ends here.
      const size = eventStart === -1 ? this.#carried + position : position - eventStart;
      if (size > this.#maxBytes) return startIn(chunk, eventStart);
      eventStart = position;
    }
    this.#carried = eventStart === -1 ? this.#carried + length : length - eventStart;
    return this.#carried > this.#maxBytes ? startIn(chunk, eventStart) : -1;
  }

  /** The last chunk ended inside a line (a closing line of the caller's must start with a line ending). */
  get midLine(): boolean {
    return !this.#atLineStart;
  }
}

/**
 * Where the event that began at `eventStart` (-1: in an earlier chunk) starts in `chunk`, past the LF
 * of a CRLF whose CR ended the blank line before it: the bytes before it are whole events.
 */
function startIn(chunk: Uint8Array, eventStart: number): number {
  if (eventStart <= 0) return 0;
  return chunk[eventStart - 1] === CR && chunk[eventStart] === LF ? eventStart + 1 : eventStart;
}
