/**
 * Legacy HTTP+SSE (2024-11-05) answers for audit. There a message POST is answered 202 and
 * its JSON-RPC answer arrives later, as a `message` event on the session's GET stream.
 * Audited requests wait here until that stream carries their answer (or ends), so their
 * lines say how they really ended. Sessions are keyed by the query of the stream's
 * `endpoint` URL, which the client POSTs to unchanged, whatever the server calls its
 * session parameter.
 */
import { createParser } from "eventsource-parser";
import type { JsonRpcId as Id } from "../proxy/jsonrpc.ts";
import type { JsonRpcMessage } from "../proxy/mcp-message.ts";
import { sseFeeder, watchBody } from "./watch-stream.ts";

type Recorder = (answer: JsonRpcMessage | undefined) => void;

/** A client that never reads its stream must not grow this without bound. */
const MAX_PENDING_PER_SESSION = 1_000;

function queryOf(url: string): string {
  try {
    return new URL(url, "http://endpoint.invalid").search;
  } catch {
    return "";
  }
}

export class LegacyAnswers {
  readonly #sessions = new Map<string, Map<Id, Recorder>>();
  readonly #maxEventBytes: number;

  /** `maxEventBytes`: an event larger than this is skipped, not held (its request is recorded at the stream's end). */
  constructor(maxEventBytes: number) {
    this.#maxEventBytes = maxEventBytes;
  }

  /** A legacy message POST: accepted (202) without an answer, to an endpoint that names its session. */
  isDeferred(req: Request, response: Response): boolean {
    return response.status === 202 && !req.headers.has("mcp-session-id") && this.#sessions.has(queryOf(req.url));
  }

  /** Waits for the answer to `id` on the stream of the session `req` posted to; false when none is open. */
  expect(req: Request, id: Id, record: Recorder): boolean {
    const pending = this.#sessions.get(queryOf(req.url));
    if (pending === undefined || pending.size >= MAX_PENDING_PER_SESSION) return false;
    // A reused id must not make the earlier request's line disappear: it is written now.
    pending.get(id)?.(undefined);
    pending.set(id, record);
    return true;
  }

  /** Watches a legacy GET stream for its endpoint and the answers to requests waiting on it. */
  watch(response: Response): Response {
    let key: string | undefined;
    let oversized = false;
    const parser = createParser({
      maxBufferSize: this.#maxEventBytes,
      onError: (error) => {
        if (error.type === "max-buffer-size-exceeded") oversized = true;
      },
      onEvent: (event) => {
        if (event.event === "endpoint") {
          key = queryOf(event.data.trim());
          if (key !== "" && !this.#sessions.has(key)) this.#sessions.set(key, new Map());
          return;
        }
        const pending = key === undefined ? undefined : this.#sessions.get(key);
        if (pending === undefined || pending.size === 0) return;
        let parsed: unknown;
        try {
          parsed = JSON.parse(event.data);
        } catch {
          return; // not JSON-RPC
        }
        for (const answer of ([] as JsonRpcMessage[]).concat(parsed as JsonRpcMessage)) {
          if (answer === null || typeof answer !== "object" || answer.method !== undefined || answer.id === undefined)
            continue;
          const record = pending.get(answer.id);
          if (record === undefined) continue;
          pending.delete(answer.id);
          record(answer);
        }
      },
    });
    return watchBody(response, {
      onChunk: sseFeeder((text) => {
        parser.feed(text);
        // The stream lives on: the oversized event is dropped, the events after it are watched.
        if (oversized) {
          oversized = false;
          parser.reset();
        }
      }),
      onEnd: () => {
        if (key === undefined) return;
        const pending = this.#sessions.get(key);
        this.#sessions.delete(key);
        for (const record of pending?.values() ?? []) record(undefined);
      },
    });
  }
}
