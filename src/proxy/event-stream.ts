/**
 * An SSE stream the proxy writes itself (the stdio bridge's responses and server
 * messages), with the same keep-alive comments and shutdown behaviour as relayed
 * streams (sse-relay.ts).
 */
import type { LiveStreams } from "./live-streams.ts";
import { defaultPingIntervalMs } from "./sse-relay.ts";

const encoder = new TextEncoder();
const ping = encoder.encode(": ping\n\n");
/** Bun sends response headers with the first body bytes: this lets clients see the stream open at once. */
const opened = encoder.encode(": open\n\n");

export interface EventStream {
  readonly stream: ReadableStream<Uint8Array>;
  /** Writes one `message` event; false once the stream is closed. */
  send(data: string, event?: string): boolean;
  close(): void;
  readonly isOpen: boolean;
  /** Called once when the stream ends, whoever ended it. */
  onClose(listener: () => void): void;
}

export interface EventStreamOptions {
  readonly live?: LiveStreams;
  readonly pingIntervalMs?: number;
  /** The SSE answer of one request: graceful stop waits for it (see LiveStreams). */
  readonly requestScoped?: boolean;
  /** Writes what the stream still owes (error events) when shutdown closes it. */
  readonly onShutdown?: (reason: string) => void;
}

export function createEventStream(options: EventStreamOptions = {}): EventStream {
  const interval = options.pingIntervalMs ?? defaultPingIntervalMs;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let open = true;
  let lastWrite = performance.now();
  const listeners: (() => void)[] = [];
  let timer: ReturnType<typeof setInterval> | undefined;
  let unregister: (() => void) | undefined;

  const end = () => {
    if (!open) return;
    open = false;
    if (timer !== undefined) clearInterval(timer);
    unregister?.();
    for (const listener of listeners.splice(0)) listener();
  };

  const write = (bytes: Uint8Array) => {
    try {
      controller.enqueue(bytes);
      lastWrite = performance.now();
      return true;
    } catch {
      end();
      return false;
    }
  };

  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      controller.enqueue(opened);
      timer = setInterval(() => {
        if (performance.now() - lastWrite >= interval * 0.9) write(ping);
      }, interval);
      unregister = options.live?.add(
        (reason) => {
          options.onShutdown?.(reason);
          result.close();
        },
        { requestScoped: options.requestScoped === true },
      );
    },
    cancel() {
      end();
    },
  });

  const result: EventStream = {
    stream,
    send(data, event = "message") {
      if (!open) return false;
      return write(encoder.encode(`event: ${event}\ndata: ${data}\n\n`));
    },
    close() {
      if (!open) return;
      end();
      try {
        controller.close();
      } catch {
        // already cancelled by the client
      }
    },
    get isOpen() {
      return open;
    },
    onClose(listener) {
      if (open) listeners.push(listener);
      else listener();
    },
  };
  return result;
}

export function eventStreamResponse(stream: EventStream, headers: Record<string, string> = {}): Response {
  return new Response(stream.stream, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache, no-transform", ...headers },
  });
}
