/**
 * The request side of an upstream connection: Bun's `socket.write` takes what the kernel
 * accepts now and returns how much that was, so the rest waits here for `drain`. A request
 * head goes out with a small body in one write; a streamed body goes out with chunked
 * framing, one chunk at a time, each after the socket took the previous one (a slow upstream
 * slows the reading of the client's body).
 */
import { Buffer } from "node:buffer";
import type { Socket } from "bun";
import { UpstreamError } from "./errors.ts";

/** A body up to this size goes out in the same write as the head. */
const wholeBodyWithHeadBytes = 64 * 1024;
const crlf = Buffer.from("\r\n", "latin1");
const lastChunk = Buffer.from("0\r\n\r\n", "latin1");
/** Where a head and small body are composed; socket.write copies what it takes at once. */
let scratch = Buffer.allocUnsafe(16 * 1024);

export class SocketWriter {
  #socket: Socket<unknown> | undefined;
  /** Bytes the socket did not take yet (the kernel buffer was full). */
  readonly #queue: Uint8Array[] = [];
  readonly #drainWaiters: { resolve: () => void; reject: (err: unknown) => void }[] = [];

  attach(socket: Socket<unknown>): void {
    this.#socket = socket;
  }

  /**
   * Writes `length` bytes (default all) and keeps what the socket does not take now; false
   * when the socket is gone. Bytes taken or kept count as sent: they may reach the upstream.
   */
  write(bytes: Uint8Array, length = bytes.byteLength): boolean {
    const shared = bytes === scratch;
    if (this.#queue.length > 0) {
      this.#queue.push(shared ? Buffer.from(bytes.subarray(0, length)) : bytes);
      return true;
    }
    const socket = this.#socket;
    if (socket === undefined) return false;
    const written = socket.write(bytes, 0, length);
    if (written < 0) return false;
    if (written < length) {
      const rest = bytes.subarray(written, length);
      this.#queue.push(shared ? Buffer.from(rest) : rest);
    }
    return true;
  }

  /** The request head, with a small whole body in the same write. */
  writeHead(head: string, body: Uint8Array | undefined): boolean {
    const headBytes = head.length;
    const bodyBytes = body === undefined ? 0 : body.byteLength;
    if (bodyBytes > wholeBodyWithHeadBytes) {
      return this.write(Buffer.from(head, "latin1")) && this.write(body as Uint8Array);
    }
    const total = headBytes + bodyBytes;
    if (scratch.length < total) scratch = Buffer.allocUnsafe(Math.max(total, scratch.length * 2));
    scratch.write(head, 0, headBytes, "latin1");
    if (body !== undefined) scratch.set(body, headBytes);
    return this.write(scratch, total);
  }

  /**
   * Sends a body with chunked framing while `wanted()` holds; true once the last chunk is
   * out, false when it stopped early (the exchange ended first). Throws when the socket
   * closes or the body cannot be read.
   */
  async writeChunked(body: ReadableStream<Uint8Array>, wanted: () => boolean): Promise<boolean> {
    const reader = body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (!wanted()) {
          // The exchange ended first (an early answer, an abort): stop reading the client.
          await reader.cancel().catch(() => {});
          return false;
        }
        if (done) break;
        const chunk = typeof value === "string" ? Buffer.from(value as string) : value;
        if (chunk.byteLength === 0) continue;
        const size = `${chunk.byteLength.toString(16)}\r\n`;
        const frame = Buffer.allocUnsafe(size.length + chunk.byteLength + 2);
        frame.write(size, 0, size.length, "latin1");
        frame.set(chunk, size.length);
        frame.set(crlf, size.length + chunk.byteLength);
        if (!this.write(frame)) throw closedWhileSending();
        await this.#drained();
      }
      if (!this.write(lastChunk)) throw closedWhileSending();
      return true;
    } catch (err) {
      await reader.cancel().catch(() => {});
      throw err instanceof UpstreamError ? err : requestBodyFailed(err);
    }
  }

  /** The socket can take more: what was kept goes out. */
  onDrain(): void {
    const socket = this.#socket;
    if (socket === undefined) return;
    while (this.#queue.length > 0) {
      const next = this.#queue[0] as Uint8Array;
      const written = socket.write(next);
      if (written < 0) return;
      if (written < next.byteLength) {
        this.#queue[0] = next.subarray(written);
        return;
      }
      this.#queue.shift();
    }
    for (const waiter of this.#drainWaiters.splice(0)) waiter.resolve();
  }

  /** The socket closed: whoever waits for it to drain learns so. */
  onClose(): void {
    this.#queue.length = 0;
    for (const waiter of this.#drainWaiters.splice(0)) waiter.reject(closedWhileSending());
  }

  #drained(): Promise<void> {
    if (this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => this.#drainWaiters.push({ resolve, reject }));
  }
}

export function closedBeforeSending(): UpstreamError {
  return new UpstreamError("UPSTREAM_CLOSED", "the upstream connection was closed before the request was sent", {
    beforeResponse: true,
    nothingWritten: true,
  });
}

export function closedWhileSending(): UpstreamError {
  return new UpstreamError("UPSTREAM_CLOSED", "the upstream connection closed while the request was being sent", {
    beforeResponse: true,
  });
}

function requestBodyFailed(err: unknown): UpstreamError {
  const reason = err instanceof Error ? err.message : String(err);
  return new UpstreamError("REQUEST_BODY_FAILED", `reading the request body failed: ${reason}`, { cause: err });
}
