/**
 * Where a request's body bytes go as they arrive on the connection: collected whole (a small
 * body of known length: the Request then carries plain bytes, the cheapest to read),
 * streamed into the Request's ReadableStream with backpressure, or read and dropped (a body
 * on GET or HEAD, which a Request cannot carry). Both framings: Content-Length and chunked.
 */
import { Buffer } from "node:buffer";
import { ChunkedBodyError, ChunkedDecoder } from "./chunked-decoder.ts";

export { ChunkedBodyError };

export interface BodyFlow {
  /** The stream's reader is full: stop reading the socket. */
  pause(): void;
  /** The reader wants more. */
  resume(): void;
}

type Mode = "collect" | "stream" | "discard";

export class RequestBodyReader {
  readonly #mode: Mode;
  readonly #decoder: ChunkedDecoder | undefined;
  /** Bytes still to come with Content-Length framing. */
  #remaining: number;
  #collected: Buffer[] = [];
  #collectedBytes = 0;
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  #done = false;
  /** Nobody wants the bytes any more (the handler answered, or cancelled the stream). */
  #dropping = false;
  readonly #onComplete: ((body: Buffer) => void) | undefined;
  readonly stream: ReadableStream<Uint8Array> | undefined;

  constructor(
    framing: { chunked: boolean; length: number; maxBodyBytes: number },
    mode: Mode,
    flow: BodyFlow,
    onComplete?: (body: Buffer) => void,
  ) {
    this.#mode = mode;
    this.#decoder = framing.chunked ? new ChunkedDecoder(framing.maxBodyBytes) : undefined;
    this.#remaining = framing.chunked ? 0 : framing.length;
    this.#onComplete = onComplete;
    if (mode === "stream") {
      this.stream = new ReadableStream<Uint8Array>(
        {
          start: (controller) => {
            this.#controller = controller;
          },
          pull: () => flow.resume(),
          cancel: () => {
            this.#dropping = true;
            flow.resume();
          },
        },
        { highWaterMark: 64 * 1024, size: (chunk) => chunk?.byteLength ?? 0 },
      );
    }
    this.#flow = flow;
  }

  readonly #flow: BodyFlow;

  get done(): boolean {
    return this.#done;
  }

  /** Takes body bytes from `input`; returns how many were the body's (the rest is the next request). Throws ChunkedBodyError. */
  push(input: Buffer): number {
    if (this.#done) return 0;
    let used: number;
    if (this.#decoder !== undefined) {
      used = this.#decoder.push(input, (bytes) => this.#deliver(bytes));
      if (this.#decoder.done) this.#finish();
    } else {
      used = Math.min(this.#remaining, input.length);
      this.#remaining -= used;
      this.#deliver(used === input.length ? input : input.subarray(0, used));
      if (this.#remaining === 0) this.#finish();
    }
    return used;
  }

  /** The handler answered: whatever still arrives is dropped. */
  drop(): void {
    if (this.#dropping) return;
    this.#dropping = true;
    if (!this.#done) {
      try {
        this.#controller?.error(new Error("the request body was not read"));
      } catch {
        // already closed
      }
    }
  }

  /** The connection ended before the body did. */
  fail(reason: unknown): void {
    if (this.#done) return;
    this.#done = true;
    try {
      this.#controller?.error(reason);
    } catch {
      // already closed
    }
  }

  #deliver(bytes: Buffer): void {
    if (bytes.length === 0 || this.#dropping) return;
    if (this.#mode === "collect") {
      this.#collected.push(bytes);
      this.#collectedBytes += bytes.length;
    } else if (this.#mode === "stream") {
      const controller = this.#controller as ReadableStreamDefaultController<Uint8Array>;
      // The socket's buffer is reused by the next read: the stream keeps its own copy.
      controller.enqueue(Buffer.from(bytes));
      if ((controller.desiredSize ?? 1) <= 0) this.#flow.pause();
    }
  }

  #finish(): void {
    this.#done = true;
    if (this.#mode === "collect") {
      const body =
        this.#collected.length === 1
          ? Buffer.from(this.#collected[0] as Buffer)
          : Buffer.concat(this.#collected, this.#collectedBytes);
      this.#collected = [];
      this.#onComplete?.(body);
    } else if (this.#mode === "stream" && !this.#dropping) {
      try {
        this.#controller?.close();
      } catch {
        // cancelled meanwhile
      }
    }
  }
}
