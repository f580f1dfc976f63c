/**
 * An SSE stream the proxy writes itself (the stdio bridge's responses and server
 * messages), with the same keep-alive comments and shutdown behaviour as relayed
 * streams (sse-relay.ts). Nothing here waits for the client, so a client that stops
 * reading would make its messages pile up in memory: past `maxQueuedBytes` its stream is
 * dropped (its session ends with it, as with any closed stream); the client sees its connection
 * reset, and the creator is told (`onDropped`) for a one-line warning.
 */
import type { LiveStreams } from "./live-streams.ts";
import { defaultPingIntervalMs } from "./sse-relay.ts";

const encoder = new TextEncoder();
const ping = encoder.encode(": ping\n\n");
/**
 * Bun.serve sends a streamed response's head with its first body bytes (an empty chunk does not do):
 * a stream that starts with this comment is seen open at once, not at its first event or keep-alive.
 */
export const streamOpened = encoder.encode(": open\n\n");

export interface EventStream {
  readonly stream: ReadableStream<Uint8Array>;
  /** Writes one `message` event; false once the stream is closed. */
  send(data: string, event?: string): boolean;
  close(): void;
  readonly isOpen: boolean;
  /** Called once when the stream ends, whoever ended it. */
  onClose(listener: () => void): void;
}

/** Bytes a stream may hold for a client that does not read them (default 16 MiB). */
const defaultMaxQueuedBytes = 16 * 1024 * 1024;

export interface EventStreamOptions {
  readonly live?: LiveStreams;
  readonly maxQueuedBytes?: number;
  readonly pingIntervalMs?: number;
  /** The SSE answer of one request: graceful stop waits for it (see LiveStreams). */
  readonly requestScoped?: boolean;
  /** Writes what the stream still owes (error events) when shutdown closes it. */
  readonly onShutdown?: (reason: string) => void;
  /** The stream was dropped because its client left `maxQueuedBytes` unread (for one log line). */
  readonly onDropped?: (maxQueuedBytes: number) => void;
}

/** The log line for a dropped stream (the gateway's and the stdio bridge's). */
export function droppedStreamText(bytes: number): string {
  return `a client's event stream was dropped: it did not read ${Math.round(bytes / 1024 / 1024)} MiB of messages`;
}

export function createEventStream(options: EventStreamOptions = {}): EventStream {
  const interval = options.pingIntervalMs ?? defaultPingIntervalMs;
  const maxQueued = options.maxQueuedBytes ?? defaultMaxQueuedBytes;
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
    } catch {
      end();
      return false;
    }
    // desiredSize is the high-water mark (0) less what waits: the bytes the client has not taken.
    if ((controller.desiredSize ?? 0) < -maxQueued) {
      // Erroring (not closing) drops what is queued, and with it the memory. With no reason: the
      // runtime reports an Error reason as if it were a crash (its source lines and stack in the
      // log); the creator's onDropped says it in one line instead.
      end();
      try {
        controller.error();
      } catch {
        // already errored
      }
      options.onDropped?.(maxQueued);
      return false;
    }
    return true;
  };

  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
        controller.enqueue(streamOpened);
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
    },
    { highWaterMark: 0, size: (chunk) => chunk?.byteLength ?? 0 },
  );

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
    // X-Accel-Buffering: reverse proxies (nginx) must pass events on at once (Streamable HTTP asks it of servers).
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no",
      ...headers,
    },
  });
}
