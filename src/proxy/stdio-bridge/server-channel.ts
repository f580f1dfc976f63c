/**
 * The bridge's connection to one stdio MCP server: newline-delimited JSON-RPC on the
 * server's stdin/stdout. Lines that are not JSON (banners, stray prints) are reported
 * and skipped, never forwarded. Runtimes (a local process, a container attach) provide
 * the byte streams; the bridge only sees messages.
 */
import type { JsonRpcMessage } from "./messages.ts";

export interface ServerChannel {
  send(message: JsonRpcMessage): void;
  /** Resolves when the server's stdout ends (the server exited or detached). */
  readonly closed: Promise<void>;
}

export interface ServerChannelOptions {
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stdin: { write(data: string): unknown; flush?(): unknown };
  readonly onMessage: (message: unknown) => void;
  readonly onInvalidLine?: (line: string) => void;
}

export function lineChannel(options: ServerChannelOptions): ServerChannel {
  const closed = readLines(options.stdout, (line) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      options.onInvalidLine?.(line);
      return;
    }
    options.onMessage(parsed);
  });
  // One flush per burst of sends (a microtask): with many requests in flight, each flush is a
  // write syscall and a wake-up of the server, so batching them is most of the win.
  let flushScheduled = false;
  const flush = () => {
    flushScheduled = false;
    try {
      options.stdin.flush?.();
    } catch {
      // The server is gone; `closed` reports it.
    }
  };
  return {
    send(message) {
      options.stdin.write(`${JSON.stringify(message)}\n`);
      if (!flushScheduled && options.stdin.flush) {
        flushScheduled = true;
        queueMicrotask(flush);
      }
    },
    closed,
  };
}

async function readLines(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let pending = "";
  try {
    for await (const chunk of stream) {
      pending += decoder.decode(chunk, { stream: true });
      let newline = pending.indexOf("\n");
      while (newline !== -1) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        if (line !== "") onLine(line);
        newline = pending.indexOf("\n");
      }
    }
  } catch {
    // The server's stdout broke: treated like its end.
  }
  const last = (pending + decoder.decode()).trim();
  if (last !== "") onLine(last);
}
