/**
 * Relays an upstream SSE body to the client unchanged, plus two things a proxy owes
 * long-lived streams:
 * - keep-alive comments while the upstream is quiet, so neither Bun's idle timer nor
 *   intermediaries (often 5 minutes) drop an idle stream. A comment is only inserted
 *   right after a newline, where it cannot split a field or end an event early;
 * - an optional rewrite of the stream's first event (the legacy `endpoint` event).
 */
import type { LiveStreams } from "./live-streams.ts";

export const defaultPingIntervalMs = 15_000;
const ping = new TextEncoder().encode(": ping\n");
const opened = new TextEncoder().encode(": open\n");
const newline = 0x0a;

export interface RelayOptions {
  readonly pingIntervalMs?: number;
  readonly live?: LiveStreams;
  /** Rewrites the leading bytes of the stream; see sse-endpoint.ts. */
  readonly head?: HeadRewriter;
  /** Abort the upstream request when the client goes away. */
  readonly onCancel?: () => void;
  /**
   * Start with a comment line: Bun sends the response head with the first body bytes,
   * so without it a client waits for the upstream's first event to see the stream open.
   */
  readonly announceOpen?: boolean;
}

/** Feeds chunks until it has decided; returns the bytes to emit, or undefined while undecided. */
export interface HeadRewriter {
  push(chunk: Uint8Array): Uint8Array | undefined;
  /** Upstream ended while undecided: whatever was held back. */
  flush(): Uint8Array;
}

export function relaySse(upstream: ReadableStream<Uint8Array>, options: RelayOptions = {}): ReadableStream<Uint8Array> {
  const interval = options.pingIntervalMs ?? defaultPingIntervalMs;
  const reader = upstream.getReader();
  let head = options.head;
  let lastWrite = performance.now();
  let atLineStart = true;
  let finished = false;
  let timer: ReturnType<typeof setInterval> | undefined;
  let unregister: (() => void) | undefined;

  const finish = () => {
    if (finished) return false;
    finished = true;
    if (timer !== undefined) clearInterval(timer);
    unregister?.();
    return true;
  };

  const write = (controller: ReadableStreamDefaultController<Uint8Array>, bytes: Uint8Array) => {
    if (bytes.byteLength === 0) return;
    controller.enqueue(bytes);
    atLineStart = bytes[bytes.byteLength - 1] === newline;
    lastWrite = performance.now();
  };

  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (options.announceOpen) controller.enqueue(opened);
      timer = setInterval(() => {
        if (atLineStart && performance.now() - lastWrite >= interval * 0.9) {
          try {
            write(controller, ping);
          } catch {
            // The client went away between ticks; cancel() cleans up.
          }
        }
      }, interval);
      unregister = options.live?.add(() => {
        if (!finish()) return;
        reader.cancel().catch(() => {});
        options.onCancel?.();
        try {
          controller.close();
        } catch {
          // already closed or errored
        }
      });
    },
    async pull(controller) {
      // Streams call pull again only after an enqueue, so keep reading until
      // something is emitted (the head rewriter may hold chunks back).
      for (;;) {
        let result: Awaited<ReturnType<typeof reader.read>>;
        try {
          result = await reader.read();
        } catch (err) {
          if (finish()) controller.error(err);
          return;
        }
        if (finished) return;
        if (result.done) {
          if (head !== undefined) write(controller, head.flush());
          finish();
          controller.close();
          return;
        }
        if (head === undefined) {
          write(controller, result.value);
          return;
        }
        const decided = head.push(result.value);
        if (decided !== undefined) {
          head = undefined;
          write(controller, decided);
          return;
        }
      }
    },
    cancel(reason) {
      finish();
      options.onCancel?.();
      return reader.cancel(reason).catch(() => {});
    },
  });
}
