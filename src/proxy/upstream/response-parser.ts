/**
 * An incremental HTTP/1.1 response parser (RFC 9112), fed the bytes of one connection as
 * they arrive. It finds the response head, decides the body's framing (§6.3) and decodes
 * chunked bodies; body bytes are handed on as views of the received buffers, never copied.
 *
 * It is strict where leniency lets one response be read as another (response splitting,
 * smuggling through a shared connection): CRLF line endings only, no obs-fold, no
 * whitespace before a field's colon, one consistent Content-Length, no Content-Length
 * next to Transfer-Encoding, and "chunked" as the only transfer coding. Anything else is
 * an error the forwarder answers with 502, and the connection is never used again.
 *
 * Why not a library: llhttp (the parser of Node and undici) ships on npm only as its
 * generator (`llhttp`, `llparse`) or inside undici's private WASM build; http-parser-js
 * follows Node's old callback binding and is lenient by design. The response side of
 * HTTP/1.1 is small enough to own and test here.
 */
import { Buffer } from "node:buffer";
import { badResponse, UpstreamError } from "./errors.ts";
import { parseResponseHead, type ResponseHead } from "./response-head.ts";

export type { Framing, ResponseHead } from "./response-head.ts";

export interface ResponseSink {
  /** The final (non-1xx) head. */
  onHead(head: ResponseHead): void;
  /** Body bytes (decoded from chunked framing); a view into a buffer that is not reused. */
  onBody(chunk: Buffer): void;
}

export const defaultMaxHeadBytes = 64 * 1024;
/** A chunk-size line with its extensions; real ones are a few bytes. */
const maxChunkLineBytes = 4096;
/** 2^52 > any body we could hold, and still exact in a double. */
const maxChunkSizeDigits = 13;

// Parser states.
const IDLE = 0;
const HEAD = 1;
const LENGTH = 2;
const CHUNK_SIZE = 3;
const CHUNK_EXT = 4;
const CHUNK_SIZE_LF = 5;
const CHUNK_DATA = 6;
const CHUNK_DATA_CR = 7;
const CHUNK_DATA_LF = 8;
const TRAILER_LINE_START = 9;
const TRAILER_LINE = 10;
const TRAILER_LF = 11;
const TRAILER_END_LF = 12;
const CLOSE = 13;
const DONE = 14;

const CR = 0x0d;
const LF = 0x0a;
const SP = 0x20;
const HTAB = 0x09;
const SEMICOLON = 0x3b;

export class ResponseParser {
  readonly #sink: ResponseSink;
  readonly #maxHeadBytes: number;
  #state = IDLE;
  #noBody = false;
  /** Head bytes seen for the current request (1xx heads included). */
  #headBytes = 0;
  /** The start of a head that has not fully arrived. */
  #partialHead: Buffer | undefined;
  #remaining = 0;
  #chunkDigits = 0;
  #lineBytes = 0;
  #extensionStarted = false;
  #receivedAny = false;
  #excess = false;

  constructor(sink: ResponseSink, options: { maxHeadBytes?: number } = {}) {
    this.#sink = sink;
    this.#maxHeadBytes = options.maxHeadBytes ?? defaultMaxHeadBytes;
  }

  /** Get ready for the response to a request with this method (HEAD answers have no body). */
  expect(method: string): void {
    this.#state = HEAD;
    this.#noBody = method === "HEAD";
    this.#headBytes = 0;
    this.#partialHead = undefined;
    this.#receivedAny = false;
    this.#excess = false;
  }

  /** The response is complete. */
  get done(): boolean {
    return this.#state === DONE;
  }

  /** Bytes arrived that belong to no response (after one ended, or with none expected). */
  get excess(): boolean {
    return this.#excess;
  }

  /** At least one byte of the expected response arrived. */
  get receivedAny(): boolean {
    return this.#receivedAny;
  }

  /** A head was parsed and its body is being read. */
  get inBody(): boolean {
    return this.#state !== IDLE && this.#state !== HEAD && this.#state !== DONE;
  }

  /** Feeds received bytes; throws an UpstreamError when they break the protocol. */
  execute(chunk: Buffer): void {
    const n = chunk.length;
    if (n === 0) return;
    if (this.#state === IDLE || this.#state === DONE) {
      this.#excess = true;
      return;
    }
    this.#receivedAny = true;
    let i = 0;
    while (i < n) {
      switch (this.#state) {
        case HEAD:
          i = this.#readHead(chunk, i);
          break;
        case LENGTH: {
          const take = Math.min(this.#remaining, n - i);
          this.#sink.onBody(take === n && i === 0 ? chunk : chunk.subarray(i, i + take));
          i += take;
          this.#remaining -= take;
          if (this.#remaining === 0) this.#state = DONE;
          break;
        }
        case CLOSE:
          this.#sink.onBody(i === 0 ? chunk : chunk.subarray(i));
          i = n;
          break;
        case CHUNK_DATA: {
          const take = Math.min(this.#remaining, n - i);
          this.#sink.onBody(chunk.subarray(i, i + take));
          i += take;
          this.#remaining -= take;
          if (this.#remaining === 0) this.#state = CHUNK_DATA_CR;
          break;
        }
        case DONE:
          this.#excess = true;
          return;
        default:
          i = this.#readFraming(chunk, i);
      }
    }
  }

  /**
   * The upstream closed the connection: completes a body that runs until close, and
   * throws for anything cut short (a response must never look complete when it is not).
   */
  finish(): void {
    if (this.#state === CLOSE) {
      this.#state = DONE;
      return;
    }
    if (this.#state === DONE || this.#state === IDLE) return;
    if (this.#state === HEAD) {
      throw new UpstreamError("UPSTREAM_CLOSED", "the upstream closed the connection before it answered", {
        beforeResponse: !this.#receivedAny,
      });
    }
    throw new UpstreamError(
      "UPSTREAM_BODY_INCOMPLETE",
      "the upstream closed the connection in the middle of a response",
    );
  }

  /** Consumes head bytes from `chunk` at `start`; returns where the unread bytes begin. */
  #readHead(chunk: Buffer, start: number): number {
    const partial = this.#partialHead;
    let buf = chunk;
    let from = start;
    let searchFrom = start;
    if (partial !== undefined) {
      buf = Buffer.concat([partial, chunk.subarray(start)]);
      from = 0;
      searchFrom = Math.max(0, partial.length - 3);
    }
    const end = buf.indexOf("\r\n\r\n", searchFrom, "latin1");
    if (end === -1) {
      if (this.#headBytes + buf.length - from > this.#maxHeadBytes) throw headTooLarge(this.#maxHeadBytes);
      this.#partialHead = from === 0 ? buf : buf.subarray(from);
      return chunk.length;
    }
    const headLength = end + 4 - from;
    this.#headBytes += headLength;
    if (this.#headBytes > this.#maxHeadBytes) throw headTooLarge(this.#maxHeadBytes);
    this.#partialHead = undefined;
    this.#parseHead(buf.toString("latin1", from, end));
    // Where the head ended, in `chunk`'s terms.
    return partial === undefined ? end + 4 : start + headLength - partial.length;
  }

  #parseHead(text: string): void {
    const head = parseResponseHead(text, this.#noBody);
    if (head === undefined) {
      this.#state = HEAD;
      return;
    }
    switch (head.framing) {
      case "none":
        this.#state = DONE;
        break;
      case "length":
        this.#remaining = head.contentLength;
        this.#state = head.contentLength === 0 ? DONE : LENGTH;
        break;
      case "chunked":
        this.#startChunk();
        break;
      case "close":
        this.#state = CLOSE;
        break;
    }
    this.#sink.onHead(head);
  }

  #startChunk(): void {
    this.#state = CHUNK_SIZE;
    this.#remaining = 0;
    this.#chunkDigits = 0;
    this.#lineBytes = 0;
    this.#extensionStarted = false;
  }

  /** Chunk-size lines, the CRLF after chunk data, and the trailer section, byte by byte. */
  #readFraming(chunk: Buffer, start: number): number {
    const n = chunk.length;
    let i = start;
    while (i < n) {
      const c = chunk[i] as number;
      switch (this.#state) {
        case CHUNK_SIZE: {
          const d = hexValue(c);
          if (d >= 0) {
            if (++this.#chunkDigits > maxChunkSizeDigits) throw badResponse("chunk size too large");
            this.#remaining = this.#remaining * 16 + d;
          } else if (this.#chunkDigits === 0) {
            throw badResponse("malformed chunk size");
          } else if (c === CR) {
            this.#state = CHUNK_SIZE_LF;
          } else if (c === SEMICOLON || c === SP || c === HTAB) {
            this.#extensionStarted = c === SEMICOLON;
            this.#state = CHUNK_EXT;
          } else {
            throw badResponse("malformed chunk size");
          }
          break;
        }
        case CHUNK_EXT:
          // chunk-ext: BWS ";" name [= value]; the extensions themselves are ignored.
          if (c === CR) this.#state = CHUNK_SIZE_LF;
          else if (c === SEMICOLON) this.#extensionStarted = true;
          else if (!this.#extensionStarted && c !== SP && c !== HTAB) throw badResponse("malformed chunk extension");
          else if ((c < SP && c !== HTAB) || c === 0x7f) throw badResponse("control character in a chunk extension");
          break;
        case CHUNK_SIZE_LF:
          if (c !== LF) throw badResponse("chunk size line not ended by CRLF");
          i++;
          if (this.#remaining === 0) {
            this.#lineBytes = 0;
            this.#state = TRAILER_LINE_START;
          } else {
            this.#state = CHUNK_DATA;
            return i;
          }
          continue;
        case CHUNK_DATA_CR:
          if (c !== CR) throw badResponse("chunk data longer than its size");
          this.#state = CHUNK_DATA_LF;
          break;
        case CHUNK_DATA_LF:
          if (c !== LF) throw badResponse("chunk data not ended by CRLF");
          this.#startChunk();
          break;
        case TRAILER_LINE_START:
          this.#state = c === CR ? TRAILER_END_LF : TRAILER_LINE;
          break;
        case TRAILER_LINE:
          if (c === CR) this.#state = TRAILER_LF;
          else if (c === LF) throw badResponse("bare LF in the trailer section");
          break;
        case TRAILER_LF:
          if (c !== LF) throw badResponse("trailer line not ended by CRLF");
          this.#state = TRAILER_LINE_START;
          break;
        case TRAILER_END_LF:
          if (c !== LF) throw badResponse("trailer section not ended by CRLF");
          this.#state = DONE;
          return i + 1;
        default:
          return i;
      }
      i++;
      // Trailers are discarded, but not without bound; nor are chunk-size lines.
      if (this.#state >= TRAILER_LINE_START) {
        if (++this.#lineBytes > this.#maxHeadBytes) throw headTooLarge(this.#maxHeadBytes);
      } else if (this.#state === CHUNK_EXT || this.#state === CHUNK_SIZE) {
        if (++this.#lineBytes > maxChunkLineBytes) throw badResponse("chunk size line too long");
      }
    }
    return i;
  }
}

function headTooLarge(limit: number): UpstreamError {
  return new UpstreamError("UPSTREAM_HEAD_TOO_LARGE", `the upstream's response head exceeds ${limit} bytes`);
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10;
  return -1;
}
