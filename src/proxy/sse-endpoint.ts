/**
 * Legacy HTTP+SSE (2024-11-05): the server's first event, `endpoint`, tells the client
 * where to POST messages. Behind mcpmgr that URL must point at the proxy, under the
 * prefix a reverse proxy adds. The first event block is parsed with eventsource-parser
 * and re-serialised; everything after it passes through byte for byte. An endpoint the
 * rewrite refuses (one outside the upstream: a client following it would post its messages
 * past the proxy and every policy in it) is not passed on: the stream gets an `error` event
 * saying why, and ends there.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { HeadRewriter } from "./sse-relay.ts";

/** Stop looking for the endpoint event after this many bytes: it is always first. */
const searchLimit = 64 * 1024;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * `rewrite` gives the endpoint to send on, or a refusal (`{ refused: text }`): then the client gets
 * that text as an `error` event instead, and the stream ends (`endsStream`).
 */
export function endpointEventRewriter(
  rewrite: (endpoint: string) => string | { readonly refused: string },
): HeadRewriter {
  let held: Uint8Array = new Uint8Array(0);
  let scanned = 0;
  let refused = false;
  return {
    endsStream: () => refused,
    push(chunk) {
      held = concat(held, chunk);
      for (;;) {
        const end = blockEnd(held, scanned);
        if (end === -1) {
          scanned = Math.max(0, held.byteLength - 3);
          return held.byteLength > searchLimit ? held : undefined;
        }
        const event = parseBlock(held.subarray(0, end));
        if (event === undefined) {
          // Comments or a bare retry: keep looking at the next block.
          scanned = end;
          continue;
        }
        if (event.event !== "endpoint") return held;
        const rest = held.subarray(end);
        const rewritten = rewrite(event.data);
        if (typeof rewritten === "string")
          return concat(encoder.encode(serialise({ ...event, data: rewritten })), rest);
        refused = true;
        held = new Uint8Array(0);
        return encoder.encode(serialise({ event: "error", id: undefined, data: rewritten.refused }));
      }
    },
    flush() {
      return held;
    },
  };
}

function parseBlock(block: Uint8Array): EventSourceMessage | undefined {
  let found: EventSourceMessage | undefined;
  const parser = createParser({ onEvent: (event) => (found ??= event) });
  parser.feed(decoder.decode(block));
  return found;
}

function serialise(event: EventSourceMessage): string {
  let text = `event: ${event.event}\n`;
  if (event.id !== undefined) text += `id: ${event.id}\n`;
  for (const line of event.data.split("\n")) text += `data: ${line}\n`;
  return `${text}\n`;
}

/** Index just past the first blank line (LF LF or CRLF CRLF) at or after `from`, or -1. */
function blockEnd(bytes: Uint8Array, from: number): number {
  for (let i = from; i < bytes.byteLength - 1; i++) {
    if (bytes[i] !== 0x0a) continue;
    if (bytes[i + 1] === 0x0a) return i + 2;
    if (bytes[i + 1] === 0x0d && bytes[i + 2] === 0x0a) return i + 3;
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.byteLength === 0) return b;
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}
