/**
 * The sink of one streamable-HTTP POST. The HTTP answer is chosen lazily: if the
 * first message for the POST is its only response, it goes back as plain JSON (the
 * cheapest answer); if something else comes first (progress, a server request), the
 * answer becomes an SSE stream that closes after the last response.
 */
import { createEventStream, eventStreamResponse, type EventStream } from "../event-stream.ts";
import type { LiveStreams } from "../live-streams.ts";
import type { JsonRpcMessage } from "./messages.ts";
import type { Sink } from "./sink.ts";

export interface PostSinkOptions {
  /** Requests in the POST; the answer is complete after this many responses. */
  readonly expectedResponses: number;
  readonly acceptsSse: boolean;
  /** The client put text/event-stream first: answer with a stream even for a lone response. */
  readonly prefersSse?: boolean;
  /** A batch answered as a JSON array (2025-03-26) rather than one object. */
  readonly batch: boolean;
  readonly headers: Record<string, string>;
  readonly live?: LiveStreams;
  /** Asked when the answer turns into a stream (exempts it from the idle timeout). */
  readonly onStream?: () => void;
}

export class PostSink implements Sink {
  readonly response: Promise<Response>;
  /** Resolves when every awaited response has been delivered, or the POST was aborted. */
  readonly finished: Promise<void>;
  #resolve!: (response: Response) => void;
  #finished!: () => void;
  #remaining: number;
  #collected: JsonRpcMessage[] = [];
  #stream: EventStream | undefined;
  #done = false;
  readonly #options: PostSinkOptions;

  constructor(options: PostSinkOptions) {
    this.#options = options;
    this.#remaining = options.expectedResponses;
    this.response = new Promise((resolve) => (this.#resolve = resolve));
    this.finished = new Promise((resolve) => (this.#finished = resolve));
  }

  get canStream(): boolean {
    if (this.#done) return false;
    return this.#stream ? this.#stream.isOpen : this.#options.acceptsSse;
  }

  send(message: JsonRpcMessage): boolean {
    if (this.#done) return false;
    const isResponse = message.method === undefined;
    if (this.#stream) return this.#streamSend(message, isResponse);
    if (
      isResponse &&
      !this.#options.batch &&
      this.#remaining === 1 &&
      !(this.#options.prefersSse && this.#options.acceptsSse)
    ) {
      this.#finish();
      this.#resolve(Response.json(message, { headers: this.#options.headers }));
      return true;
    }
    if (isResponse && !this.#options.prefersSse && (this.#options.batch || !this.#options.acceptsSse)) {
      this.#collected.push(message);
      if (--this.#remaining === 0) {
        this.#finish();
        const body = this.#options.batch ? this.#collected : this.#collected[0];
        this.#resolve(Response.json(body, { headers: this.#options.headers }));
      }
      return true;
    }
    if (!this.#options.acceptsSse) return false;
    this.#stream = createEventStream(this.#options.live ? { live: this.#options.live } : {});
    this.#options.onStream?.();
    this.#resolve(eventStreamResponse(this.#stream, this.#options.headers));
    for (const held of this.#collected.splice(0)) this.#stream.send(JSON.stringify(held));
    return this.#streamSend(message, isResponse);
  }

  /** Ends the POST early (session ended, server gone). */
  abort(): void {
    if (this.#done) return;
    this.#finish();
    this.#stream?.close();
    this.#resolve(new Response(null, { status: 204 }));
  }

  #streamSend(message: JsonRpcMessage, isResponse: boolean): boolean {
    const stream = this.#stream as EventStream;
    const sent = stream.send(JSON.stringify(message));
    if (isResponse && --this.#remaining === 0) {
      this.#finish();
      stream.close();
    }
    return sent;
  }

  #finish(): void {
    this.#done = true;
    this.#finished();
  }
}
