/**
 * Relays an upstream SSE body to the client unchanged, plus two things a proxy owes
 * long-lived streams:
 * - keep-alive comments while the upstream is quiet, so neither Bun's idle timer nor
 *   intermediaries (often 5 minutes) drop an idle stream. A comment is only inserted
 *   right after a newline, where it cannot split a field or end an event early;
 * - an optional rewrite of the stream's first event (the legacy `endpoint` event).
 * And it never ends a stream without a word: when mcpmgr stops or the upstream connection
 * breaks mid-stream, the answers the stream still owes end as JSON-RPC error events
 * (sse-answers.ts), and the stream closes cleanly instead of being cut (a 2026-07-28 listen
 * stream that mcpmgr ends gets that revision's graceful end instead).
 */
import type { LiveStreams } from "./live-streams.ts";
import type { PendingAnswers } from "./sse-answers.ts";

export const defaultPingIntervalMs = 15_000;
const ping = new TextEncoder().encode(": ping\n");
const opened = new TextEncoder().encode(": open\n");
const newline = 0x0a;
const carriageReturn = 0x0d;

export interface RelayOptions {
  readonly pingIntervalMs?: number;
  readonly live?: LiveStreams;
  /** Rewrites the leading bytes of the stream; see sse-endpoint.ts. */
  readonly head?: HeadRewriter;
  /** Abort the upstream request when the client goes away. */
  readonly onCancel?: () => void;
  /**
   * The SSE answer of one request (a POST): graceful stop waits for it within its bound
   * (LiveStreams), and these are the answers it owes, ended with an error if it must close early.
   */
  readonly answers?: PendingAnswers;
  /**
   * A POST's stream that never ends by itself (a 2026-07-28 `subscriptions/listen`): graceful stop
   * does not wait for it, and ends it as the revision's graceful end (sse-answers.ts).
   */
  readonly standalone?: boolean;
  /** Called once the stream has ended, however it ended. */
  readonly onEnd?: () => void;
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
  /** Once decided: whether the stream ends with those bytes (the upstream is let go). */
  endsStream?(): boolean;
}

export function relaySse(upstream: ReadableStream<Uint8Array>, options: RelayOptions = {}): ReadableStream<Uint8Array> {
  const interval = options.pingIntervalMs ?? defaultPingIntervalMs;
  const reader = upstream.getReader();
  let head = options.head;
  let lastWrite = performance.now();
  let atLineStart = true;
  /** The last byte sent ended a line (a lone CR may be half of a CRLF: no ping after it, but no line to end). */
  let lineEnded = true;
  let finished = false;
  let timer: ReturnType<typeof setInterval> | undefined;
  let unregister: (() => void) | undefined;
  const answers = options.answers;

  const finish = () => {
    if (finished) return false;
    finished = true;
    if (timer !== undefined) clearInterval(timer);
    unregister?.();
    options.onEnd?.();
    return true;
  };

  const write = (controller: ReadableStreamDefaultController<Uint8Array>, bytes: Uint8Array) => {
    if (bytes.byteLength === 0) return;
    controller.enqueue(bytes);
    const last = bytes[bytes.byteLength - 1];
    atLineStart = last === newline;
    lineEnded = atLineStart || last === carriageReturn;
    lastWrite = performance.now();
  };

  /** Upstream bytes go through here: the answers they carry are noted. */
  const relay = (controller: ReadableStreamDefaultController<Uint8Array>, bytes: Uint8Array) => {
    write(controller, bytes);
    answers?.seen(bytes);
  };

  /** Ends the stream early: what it still owes as error events, then a clean close. */
  const closeEarly = (controller: ReadableStreamDefaultController<Uint8Array>, reason: string, stopping: boolean) => {
    try {
      if (answers !== undefined) controller.enqueue(answers.closing(reason, !lineEnded, stopping));
      controller.close();
    } catch {
      // the client already went away
    }
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
      unregister = options.live?.add(
        (reason) => {
          if (!finish()) return;
          reader.cancel().catch(() => {});
          options.onCancel?.();
          closeEarly(controller, reason, true);
        },
        { requestScoped: answers !== undefined && options.standalone !== true },
      );
    },
    async pull(controller) {
      // Streams call pull again only after an enqueue, so keep reading until
      // something is emitted (the head rewriter may hold chunks back).
      for (;;) {
        let result: Awaited<ReturnType<typeof reader.read>>;
        try {
          result = await reader.read();
        } catch {
          // The upstream connection broke (or sent a broken chunk): the client hears it as errors.
          if (!finish()) return;
          if (head !== undefined) relay(controller, head.flush());
          closeEarly(
            controller,
            "the connection to the upstream MCP server broke before the answer was complete",
            false,
          );
          return;
        }
        if (finished) return;
        if (result.done) {
          if (head !== undefined) relay(controller, head.flush());
          finish();
          controller.close();
          return;
        }
        if (head === undefined) {
          relay(controller, result.value);
          return;
        }
        const decided = head.push(result.value);
        if (decided !== undefined) {
          const ends = head.endsStream?.() === true;
          head = undefined;
          relay(controller, decided);
          if (ends && finish()) {
            reader.cancel().catch(() => {});
            options.onCancel?.();
            controller.close();
          }
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
