/**
 * A member's event stream for one relayed call (relayed-call.ts), read until it brings the call's
 * answer, across the member's disconnects. A streamable-HTTP server may close the connection of a
 * call's stream before it answers, after an event with an id (2025-11-25's polling, or a dropped
 * connection), and expects the client to resume the stream with a GET carrying `Last-Event-ID`,
 * after the `retry` interval it gave. The SDK client does that; so does the fast lane, here.
 *
 * An uninterrupted stream costs what it did before resumption existed: one parser, whose id and
 * retry fields are remembered as they pass. Only an early end does more: wait, GET the member's
 * endpoint with the call's own headers (its session, revision and the gateway's credentials), and
 * feed the same handler. Waits and resumptions stop as soon as the call is answered or cancelled
 * (`signal`); its timeout still runs. As the SDK client: the wait is the member's `retry` when it
 * gave one, else a backoff, never under a floor that doubles with each resumed stream in a row that
 * brought no message; a resumption that opens a stream starts the count of failures afresh, and a few
 * failures in a row give up.
 */
import { createParser } from "eventsource-parser";
import { errorMessage } from "../errors.ts";
import { type AnswerLimit, answerTooLargeText } from "../proxy/answer-limit.ts";
import type { MemberSend } from "./member-send.ts";

/** Bounds of resumption: the SDK client's defaults, and a cap on what a member may ask to be waited. */
export const RESUME_LIMITS = {
  /** The wait before a resumption when the member gave no `retry`; it grows by `backoff` per failure. */
  firstDelayMs: 1000,
  backoff: 1.5,
  /** No wait is longer than this, whatever `retry` the member sent (the call's timeout still runs). */
  maxDelayMs: 30_000,
  /**
   * No wait is shorter than this, whatever `retry` the member sent; it doubles with each resumed stream in a
   * row that ended without a message, so a member answering every GET with a stream that ends at once
   * (`retry: 0`) is asked a few times a minute, not hundreds of times a second.
   */
  minDelayMs: 100,
  /** Failed resumptions in a row (no stream opened, or an error) before the call fails. */
  maxFailures: 3,
} as const;

export interface MemberStreamReader {
  /** The member's endpoint, as the call's POST reached it. */
  readonly url: string;
  /** The call's POST headers: on a resumption the same session, revision, credentials and trace. */
  readonly headers: readonly [string, string][];
  /** How a resumption reaches the member (member-send.ts), as the call's POST did. */
  readonly send: MemberSend;
  /** False: an early end is not resumed (2026-07-28 has no resumable streams), whatever ids the stream had. */
  readonly resumes?: boolean;
  /** Aborted when the call ends (answered, cancelled, timed out): no wait or resumption outlives it. */
  readonly signal: AbortSignal;
  /** One event's data (a message event with data); the reader stops once `answered()` says so. */
  onData(data: string): void;
  answered(): boolean;
  /** A resumption met 404: the member forgot the session. */
  onSessionGone(): void;
  /** The largest event held (MCPMGR_MAX_MESSAGE_BYTES): a larger one fails the call (answer-limit.ts). */
  readonly limit: AnswerLimit;
}

/**
 * Reads `body` (and its resumptions) until the call is answered or aborted: undefined then. When the
 * member's stream cannot bring the answer, why (for the call's error).
 */
export async function readMemberStream(body: ReadableStream<Uint8Array>, reader: MemberStreamReader) {
  let lastEventId: string | undefined;
  let retryMs: number | undefined;
  let oversized = false;
  /** Whether the stream being read brought a message; resumed streams in a row that brought none. */
  let delivered = false;
  let empty = 0;
  const parser = createParser({
    maxBufferSize: reader.limit.maxBytes,
    onError: (error) => {
      if (error.type === "max-buffer-size-exceeded") oversized = true;
    },
    onEvent: (event) => {
      if ((event.event !== undefined && event.event !== "message") || event.data === "") return;
      delivered = true;
      reader.onData(event.data);
    },
    onId: (id) => {
      lastEventId = id;
    },
    onRetry: (ms) => {
      retryMs = ms;
    },
  });
  let stream = body;
  let failures = 0;
  for (;;) {
    let why = "its stream ended early";
    delivered = false;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of stream) {
        parser.feed(decoder.decode(chunk, { stream: true }));
        if (oversized) {
          void stream.cancel().catch(() => {});
          const text = answerTooLargeText(`over ${reader.limit.maxBytes} bytes`);
          reader.limit.onExceeded?.(text);
          return text;
        }
        // Answered (or cancelled): a member that keeps the stream open past its answer holds nothing here.
        if (reader.answered()) break;
      }
    } catch (err) {
      why = errorMessage(err);
    }
    if (reader.answered() || reader.signal.aborted) return undefined;
    // An empty id resets it (SSE): no id, nothing to resume from.
    if (!lastEventId || reader.resumes === false) return why;
    empty = delivered || stream === body ? 0 : empty + 1;
    let resumed: ReadableStream<Uint8Array> | undefined;
    while (resumed === undefined) {
      if (failures >= RESUME_LIMITS.maxFailures) return why;
      await pause(resumeDelay(retryMs, failures, empty), reader.signal);
      if (reader.answered() || reader.signal.aborted) return undefined;
      const outcome = await resume(reader, lastEventId);
      if ("stream" in outcome) resumed = outcome.stream;
      else {
        failures++;
        why = `its stream ended early and resuming it failed: ${outcome.failed}`;
        if (outcome.final) return why;
      }
    }
    failures = 0;
    parser.reset();
    stream = resumed;
  }
}

/**
 * The wait before a resumption: the member's `retry`, else the backoff; at least the floor, doubled for
 * each resumed stream in a row that brought no message (`empty`); at most the cap.
 */
export function resumeDelay(retryMs: number | undefined, failures: number, empty = 0): number {
  const delay = retryMs ?? RESUME_LIMITS.firstDelayMs * RESUME_LIMITS.backoff ** failures;
  return Math.min(Math.max(delay, RESUME_LIMITS.minDelayMs * 2 ** empty), RESUME_LIMITS.maxDelayMs);
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

type Resumption = { stream: ReadableStream<Uint8Array> } | { failed: string; final: boolean };

/**
 * One resumption: the stream, or why it failed; final when no try can succeed (the member forgot the
 * session, or offers no stream to GET).
 */
async function resume(reader: MemberStreamReader, lastEventId: string): Promise<Resumption> {
  const headers: [string, string][] = [];
  for (const header of reader.headers) {
    const name = header[0].toLowerCase();
    if (name !== "content-type" && name !== "accept") headers.push(header);
  }
  headers.push(["accept", "text/event-stream"], ["last-event-id", lastEventId]);
  let response: Response;
  try {
    response = await reader.send(reader.url, {
      method: "GET",
      headers,
      redirect: "manual",
      signal: reader.signal,
    });
  } catch (err) {
    return { failed: errorMessage(err), final: false };
  }
  const type = response.headers.get("content-type") ?? "";
  if (response.ok && type.includes("text/event-stream") && response.body !== null) return { stream: response.body };
  void response.body?.cancel().catch(() => {});
  if (response.status === 404) reader.onSessionGone();
  const final = response.status === 404 || response.status === 405;
  return { failed: response.ok ? `no event stream (${type || "no content type"})` : `HTTP ${response.status}`, final };
}
