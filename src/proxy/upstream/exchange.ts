/**
 * One request/response on an upstream connection, from the response's side: the head once
 * parsed, the body bytes received before the Response is handed out, and how it is handed
 * out: whole (a small body of known length, waited for) or as a stream fed as bytes arrive.
 * The connection (connection.ts) owns the socket; it asks the exchange what to do with the
 * bytes and pauses the socket when the exchange says the reader is full.
 */
import type { Buffer } from "node:buffer";
import type { Cancellation } from "./cancellation.ts";
import { UpstreamError } from "./errors.ts";
import type { ResponseHead } from "./response-head.ts";
import { nullBodyStatus, streamedResponse, wholeResponse } from "./responses.ts";
import type { RequestSpec } from "./types.ts";

/** What the stream of a streamed body tells the connection. */
export interface StreamFeedback {
  /** The reader wants more: the socket may read again. */
  pull(): void;
  /** The reader went away (the client disconnected). */
  cancel(): void;
}

export class Exchange {
  readonly method: string;
  readonly signal: AbortSignal | undefined;
  readonly cancel: Cancellation | undefined;
  readonly #resolve: (response: Response) => void;
  readonly #reject: (err: unknown) => void;
  /** The listener on `cancel` or `signal`, removed when the exchange ends. */
  onAbort: (() => void) | undefined;
  /** The Response was handed out (or the promise rejected). */
  settled = false;
  head: ResponseHead | undefined;
  /** Body bytes received before the Response was handed out. */
  #chunks: Buffer[] = [];
  #bufferedBytes = 0;
  #stream: ReadableStreamDefaultController<Uint8Array> | undefined;
  /** The whole request (head and body) was written. */
  requestSent = false;
  /** Not one byte of this request made it into the socket. */
  nothingWritten = true;

  constructor(spec: RequestSpec, resolve: (response: Response) => void, reject: (err: unknown) => void) {
    this.method = spec.method;
    this.signal = spec.signal;
    this.cancel = spec.cancel;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  /** Body bytes; true when a streamed body's reader is full (the socket should stop reading). */
  receive(chunk: Buffer): boolean {
    const stream = this.#stream;
    if (stream === undefined) {
      if (nullBodyStatus((this.head as ResponseHead).status)) return false;
      this.#chunks.push(chunk);
      this.#bufferedBytes += chunk.byteLength;
      return false;
    }
    stream.enqueue(chunk);
    return (stream.desiredSize ?? 1) <= 0;
  }

  /** A small body of known length is worth waiting for: it is then sent on as one piece. */
  waitsForWholeBody(wholeBodyBytes: number): boolean {
    const head = this.head as ResponseHead;
    if (nullBodyStatus(head.status)) return true; // whatever it sends is read and dropped
    return head.framing === "length" && head.contentLength <= wholeBodyBytes;
  }

  /** Hands out the Response with a streamed body; the bytes so far are its first chunks. Throws an UpstreamError. */
  handOutStream(highWaterMark: number, feedback: StreamFeedback): void {
    let response: Response;
    try {
      response = streamedResponse(
        this.head as ResponseHead,
        {
          start: (controller) => {
            this.#stream = controller;
            for (const chunk of this.#chunks) controller.enqueue(chunk);
            this.#chunks = [];
          },
          pull: feedback.pull,
          cancel: feedback.cancel,
        },
        highWaterMark,
      );
    } catch (err) {
      this.#stream = undefined;
      throw err;
    }
    this.settled = true;
    this.#resolve(response);
  }

  /** The response ended: a streamed body closes, anything else is handed out whole. Throws an UpstreamError. */
  complete(): void {
    if (this.settled) {
      this.#stream?.close();
      return;
    }
    const response = wholeResponse(
      this.head as ResponseHead,
      this.#chunks,
      this.#bufferedBytes,
      this.method === "HEAD",
    );
    this.#chunks = [];
    this.settled = true;
    this.#resolve(response);
  }

  /** The exchange failed: the promise rejects, or a body already handed out errors. */
  fail(err: unknown): void {
    if (this.settled) {
      try {
        this.#stream?.error(err);
      } catch {
        // already closed or errored
      }
      return;
    }
    this.settled = true;
    this.#reject(err);
  }
}

/** The socket's own error (ECONNRESET, …) keeps its code; the flags say whether a retry is safe. */
export function withCause(err: unknown, cause: Error | undefined, exchange: Exchange): unknown {
  if (!(err instanceof UpstreamError)) return err;
  const code = (cause as { code?: string } | undefined)?.code;
  if (code === undefined && !exchange.nothingWritten) return err;
  return new UpstreamError(code ?? err.code, cause === undefined ? err.message : `${err.message} (${cause.message})`, {
    beforeResponse: err.beforeResponse,
    nothingWritten: exchange.nothingWritten,
    cause,
  });
}
