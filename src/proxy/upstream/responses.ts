/**
 * Responses the upstream client hands out: with the whole body when it is small and already
 * here (a plain byte body is the cheapest thing for Bun.serve to send on), or with a body
 * that streams as the bytes arrive.
 */
import { Buffer } from "node:buffer";
import { badResponse } from "./errors.ts";
import type { ResponseHead } from "./response-head.ts";

/** Statuses whose Response cannot have a body (fetch spec): a body the upstream sends anyway is dropped. */
export function nullBodyStatus(status: number): boolean {
  return status === 204 || status === 205 || status === 304;
}

/** A response's head as this client received it. */
interface Received {
  /** The field lines, names spelled as the upstream sent them. */
  readonly fields: readonly (readonly [string, string])[];
  /** Handed out with the whole body: reading it cannot fail any more. */
  readonly whole: boolean;
}

/** Every Response this client handed out, with its head as received. */
const received = new WeakMap<Response, Received>();

/** Whether `response` came from this client with its whole body already received. */
export function isWholeResponse(response: Response): boolean {
  return received.get(response)?.whole === true;
}

/**
 * The field lines of `response` as the upstream sent them, when it came from this client: the
 * forwarder reads them instead of `response.headers`, which makes a Headers object per answer.
 */
export function receivedFields(response: Response): readonly (readonly [string, string])[] | undefined {
  return received.get(response)?.fields;
}

/** A Response with the body received so far as its whole body; throws an UpstreamError if the head makes none. */
export function wholeResponse(head: ResponseHead, chunks: readonly Buffer[], bytes: number, headRequest: boolean) {
  const body =
    headRequest || chunks.length === 0
      ? null
      : chunks.length === 1
        ? (chunks[0] as Buffer)
        : Buffer.concat(chunks as Buffer[], bytes);
  const response = respond(body, head);
  received.set(response, { fields: head.headers, whole: true });
  return response;
}

export interface StreamHooks {
  /** The stream exists: its controller, to enqueue what arrives. */
  start(controller: ReadableStreamDefaultController<Uint8Array>): void;
  /** The reader wants more (after the queue had reached the high-water mark). */
  pull(): void;
  /** The reader went away. */
  cancel(): void;
}

/** A Response whose body streams; `highWaterMark` bytes may wait for the reader. */
export function streamedResponse(head: ResponseHead, hooks: StreamHooks, highWaterMark: number): Response {
  const body = new ReadableStream<Uint8Array>(
    { start: hooks.start, pull: hooks.pull, cancel: hooks.cancel },
    { highWaterMark, size: (chunk) => chunk?.byteLength ?? 0 },
  );
  const response = respond(body, head);
  received.set(response, { fields: head.headers, whole: false });
  return response;
}

function respond(body: Uint8Array | ReadableStream<Uint8Array> | null, head: ResponseHead): Response {
  try {
    return new Response(body, { status: head.status, statusText: head.statusText, headers: head.headers });
  } catch (err) {
    throw badResponse(err instanceof Error ? err.message : String(err));
  }
}
