/**
 * The sink of one streamable-HTTP POST. The HTTP answer is chosen lazily: if the
 * first message for the POST is its only response, it goes back as plain JSON (the
 * cheapest answer); if something else comes first (progress, a server request), the
 * answer becomes an SSE stream that closes after the last response.
 */
import { createEventStream, eventStreamResponse, type EventStream } from "../event-stream.ts";
import { JsonRpcCode } from "../jsonrpc.ts";
import type { LiveStreams } from "../live-streams.ts";
import type { JsonRpcId } from "../jsonrpc.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import { errorResponse } from "./messages.ts";
import { metaKey } from "./modern.ts";
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
  /** Ids of the requests in the POST: what shutdown still owes an answer to. */
  readonly requestIds?: readonly JsonRpcId[];
  /** HTTP status of a lone JSON answer (2026-07-28 maps some errors to 400/404); 200 without. */
  readonly statusOf?: (message: JsonRpcMessage) => number;
  /** Answer with a stream from the start (a listen stream). */
  readonly forceStream?: boolean;
  /**
   * The POST is a 2026-07-28 `subscriptions/listen`: its stream never ends by itself, so graceful
   * stop does not wait for it and ends it the revision's graceful way (a complete result naming the
   * subscription) instead of with an error.
   */
  readonly listen?: boolean;
  /** The client closed the stream before every answer was out. */
  readonly onAbandon?: () => void;
  /** The stream was dropped: its client left `bytes` unread (event-stream.ts). */
  readonly onDropped?: (bytes: number) => void;
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
  readonly #awaited: Set<JsonRpcId>;
  readonly #options: PostSinkOptions;

  constructor(options: PostSinkOptions) {
    this.#options = options;
    this.#remaining = options.expectedResponses;
    this.#awaited = new Set(options.requestIds ?? []);
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
    if (isResponse) this.#awaited.delete(message.id as JsonRpcId);
    if (this.#stream) return this.#streamSend(message, isResponse);
    if (
      isResponse &&
      !this.#options.batch &&
      this.#remaining === 1 &&
      !(this.#options.prefersSse && this.#options.acceptsSse)
    ) {
      this.#finish();
      const status = this.#options.statusOf?.(message) ?? 200;
      this.#resolve(Response.json(message, { status, headers: this.#options.headers }));
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
    const stream = this.#openStream();
    for (const held of this.#collected.splice(0)) stream.send(JSON.stringify(held));
    return this.#streamSend(message, isResponse);
  }

  /** Turns the answer into a stream now (a listen stream answers with one at once). */
  #openStream(): EventStream {
    const stream = createEventStream({
      ...(this.#options.live ? { live: this.#options.live } : {}),
      requestScoped: this.#options.listen !== true,
      onShutdown: (reason) => (this.#options.listen === true ? this.#endListens() : this.failAwaited(reason)),
      ...(this.#options.onDropped ? { onDropped: this.#options.onDropped } : {}),
    });
    this.#stream = stream;
    stream.onClose(() => {
      if (this.#done) return;
      this.#finish();
      this.#options.onAbandon?.();
    });
    this.#options.onStream?.();
    this.#resolve(eventStreamResponse(stream, this.#options.headers));
    return stream;
  }

  /** Opens the stream at once (used for listen streams, whose answer comes last). */
  streamNow(): void {
    if (!this.#done && this.#stream === undefined) this.#openStream();
  }

  /** Ends every answer still owed with a JSON-RPC error (graceful stop ran out of time). */
  failAwaited(reason: string): void {
    for (const id of [...this.#awaited]) this.send(errorResponse(id, JsonRpcCode.internalError, reason));
  }

  /** mcpmgr stops or restarts the server: each listen still open ends gracefully. */
  #endListens(): void {
    for (const id of [...this.#awaited])
      this.send({ jsonrpc: "2.0", id, result: { resultType: "complete", _meta: { [metaKey.subscriptionId]: id } } });
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
