/**
 * The bridge's connection to one stdio MCP server: newline-delimited JSON-RPC on the
 * server's stdin/stdout. Lines that are not JSON (banners, stray prints) are reported
 * and skipped, never forwarded. Runtimes (a local process, a container attach) provide
 * the byte streams; the bridge only sees messages.
 *
 * Framing is linear: each chunk is searched for a newline once and a line is joined from
 * its chunks once, so a one-line 60 MB answer costs one copy and one parse rather than a
 * string concatenation per chunk (which was quadratic and froze every other session). A
 * line longer than the maximum message size is dropped as it streams in (never held
 * whole) and reported with the request id it answers, when its head or tail shows one.
 */
import { defaultMaxMessageBytes } from "../answer-limit.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import { parseJsonText } from "./json-text.ts";

/** The server has not read what it was sent, and this message would take the backlog past the limit. */
export class ServerNotReading extends Error {
  readonly waitingBytes: number;
  constructor(waitingBytes: number) {
    super(`the MCP server is not reading its input (about ${waitingBytes} bytes are waiting for it)`);
    this.waitingBytes = waitingBytes;
  }
}

export interface ServerChannel {
  send(message: JsonRpcMessage): void;
  /** Resolves when the server's stdout ends (the server exited or detached). */
  readonly closed: Promise<void>;
}

export interface ServerChannelOptions {
  readonly stdout: ReadableStream<Uint8Array>;
  /**
   * A write or flush that returns a promise has left data waiting; it settles once that is taken.
   * `waiting`, when given (a container's attach), says how much waits instead.
   */
  readonly stdin: { write(data: string): unknown; flush?(): unknown; waiting?(): number };
  readonly onMessage: (message: unknown) => void;
  readonly onInvalidLine?: (line: string) => void;
  /** A line over `maxMessageBytes` was dropped; `id` is the request it answered, if it showed. */
  readonly onOversized?: (bytes: number, id: string | number | undefined) => void;
  readonly maxMessageBytes?: number;
}

export function lineChannel(options: ServerChannelOptions): ServerChannel {
  const maxWaiting = options.maxMessageBytes ?? defaultMaxMessageBytes;
  // Characters handed to stdin, and how many of them the server is known to have taken (a close
  // bound on the bytes). A write's promise settles only once the sink is empty, which a server that
  // reads slowly under steady traffic never lets happen; but a server reads its stdin in order, so
  // its answer to a request says it took everything up to that request's end.
  let written = 0;
  let taken = 0;
  let lastWrite = 0;
  /** Requests sent and not answered yet, by id: where each ends in what was written (in order). */
  const ends = new Map<string | number, number>();
  const takenUpTo = (end: number) => {
    taken = Math.max(taken, end);
    for (const [id, at] of ends) {
      if (at > taken) break;
      ends.delete(id);
    }
  };
  const track = (result: unknown) => {
    if (!(result instanceof Promise)) {
      takenUpTo(written);
      return;
    }
    const write = ++lastWrite;
    const end = written;
    // Every pending write settles when the buffer drains; only the latest one says it is empty.
    result.then(
      () => {
        if (write === lastWrite) takenUpTo(end);
      },
      () => {},
    );
  };
  // One flush per burst of sends (a microtask): with many requests in flight, each flush is a
  // write syscall and a wake-up of the server, so batching them is most of the win.
  let flushScheduled = false;
  const flush = () => {
    flushScheduled = false;
    try {
      const flushed = options.stdin.flush?.();
      if (flushed instanceof Promise) flushed.catch(() => {});
    } catch {
      // The server is gone; `closed` reports it.
    }
  };
  const closed = readLines(options, (line) => {
    const parsed = parseJsonText(line);
    if ("error" in parsed) {
      options.onInvalidLine?.(line.length > 500 ? `${line.slice(0, 500)}…` : line);
      return;
    }
    const { value } = parsed;
    if (isAnswer(value)) {
      const end = ends.get(value.id);
      if (end !== undefined) takenUpTo(end);
    }
    options.onMessage(value);
  });
  return {
    send(message) {
      const line = `${JSON.stringify(message)}\n`;
      const held = options.stdin.waiting?.() ?? written - taken;
      if (held > 0 && held + line.length > maxWaiting) throw new ServerNotReading(held);
      const result = options.stdin.write(line);
      written += line.length;
      if ("method" in message && "id" in message && (typeof message.id === "string" || typeof message.id === "number"))
        ends.set(message.id, written);
      track(result);
      if (!flushScheduled && options.stdin.flush) {
        flushScheduled = true;
        queueMicrotask(flush);
      }
    },
    closed,
  };
}

/** A server's answer to a request (a response: an id and no method). */
function isAnswer(value: unknown): value is { id: string | number } {
  if (typeof value !== "object" || value === null || "method" in value || !("id" in value)) return false;
  return typeof value.id === "string" || typeof value.id === "number";
}

/** How much of a dropped line's head and tail is kept to find its id. */
const idWindow = 512;

async function readLines(options: ServerChannelOptions, onLine: (line: string) => void): Promise<void> {
  const max = options.maxMessageBytes ?? defaultMaxMessageBytes;
  const decoder = new TextDecoder();
  let parts: Uint8Array[] = [];
  let pending = 0;
  // While a line is over the limit: its size so far, its head and its latest tail.
  let dropping = -1;
  let head: Uint8Array = new Uint8Array(0);
  let tail: Uint8Array = new Uint8Array(0);

  const emit = (bytes: Uint8Array) => {
    const line = decoder.decode(bytes).trim();
    if (line !== "") onLine(line);
  };
  const joined = (last: Uint8Array): Uint8Array => {
    if (parts.length === 0) return last;
    const out = new Uint8Array(pending + last.byteLength);
    let at = 0;
    for (const part of parts) {
      out.set(part, at);
      at += part.byteLength;
    }
    out.set(last, at);
    return out;
  };
  const endDropped = (last: Uint8Array) => {
    const end = last.byteLength > idWindow ? last.subarray(last.byteLength - idWindow) : last;
    const size = dropping + last.byteLength;
    options.onOversized?.(size, idOf(decoder.decode(head), decoder.decode(concatTail(tail, end))));
    dropping = -1;
  };
  const startDropping = (first: Uint8Array) => {
    const all = joined(first);
    dropping = all.byteLength;
    head = all.slice(0, idWindow);
    tail = all.slice(Math.max(0, all.byteLength - idWindow));
    parts = [];
    pending = 0;
  };

  try {
    for await (const chunk of options.stdout) {
      let from = 0;
      for (;;) {
        const newline = chunk.indexOf(0x0a, from);
        const piece = chunk.subarray(from, newline === -1 ? chunk.byteLength : newline);
        if (newline === -1) {
          if (dropping >= 0) {
            dropping += piece.byteLength;
            tail = concatTail(tail, piece);
          } else if (pending + piece.byteLength > max) startDropping(piece);
          else if (piece.byteLength > 0) {
            parts.push(piece);
            pending += piece.byteLength;
          }
          break;
        }
        if (dropping >= 0) endDropped(piece);
        else if (pending + piece.byteLength > max) {
          startDropping(piece);
          endDropped(new Uint8Array(0));
        } else emit(joined(piece));
        parts = [];
        pending = 0;
        from = newline + 1;
      }
    }
  } catch {
    // The server's stdout broke: treated like its end.
  }
  if (dropping < 0 && pending > 0) emit(joined(new Uint8Array(0)));
}

function concatTail(tail: Uint8Array, more: Uint8Array): Uint8Array {
  if (more.byteLength >= idWindow) return more.slice(more.byteLength - idWindow);
  const out = new Uint8Array(Math.min(idWindow, tail.byteLength + more.byteLength));
  const keep = out.byteLength - more.byteLength;
  out.set(tail.subarray(tail.byteLength - keep), 0);
  out.set(more, keep);
  return out;
}

/** The top-level "id" of a JSON-RPC message seen only by its head and tail (best effort). */
function idOf(head: string, tail: string): string | number | undefined {
  const pattern = /"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*[,}]/;
  const inHead = /^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")/.exec(head);
  const found = inHead ?? pattern.exec(tail.slice(-200));
  if (!found?.[1]) return undefined;
  return found[1].startsWith('"') ? (JSON.parse(found[1]) as string) : Number(found[1]);
}
