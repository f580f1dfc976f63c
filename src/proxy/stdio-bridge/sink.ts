/**
 * Where the bridge delivers messages for a client. A session has a standalone sink
 * (its GET stream, or the legacy SSE stream) and each HTTP POST carrying requests has
 * its own sink, which may answer with plain JSON or turn into an SSE stream.
 */
import type { EventStream } from "../event-stream.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";

export interface Sink {
  /** Delivers a message; false if it cannot (closed, or JSON-only and not a response). */
  send(message: JsonRpcMessage): boolean;
  /** Whether messages other than the awaited responses can still travel here. */
  readonly canStream: boolean;
  /** Ends a pending HTTP answer early (the session ended). */
  abort?(): void;
}

/** A GET stream or legacy SSE stream. */
export function streamSink(stream: EventStream): Sink {
  return {
    send: (message) => stream.send(JSON.stringify(message)),
    get canStream() {
      return stream.isOpen;
    },
  };
}
