/**
 * The answers a relayed SSE response still owes its client. A POST answered with an event
 * stream ends once the stream has carried a response for each request in the POST; when the
 * stream has to end before that (mcpmgr stops, the upstream connection breaks), the client
 * must hear why, or an MCP client waits for its own timeout. This watches the relayed events
 * for responses (eventsource-parser) and, at the end, writes a JSON-RPC error event for every
 * request still unanswered. The request's ids are read from its body only then.
 *
 * Watching must not cost what the relay saves by streaming: the parser holds at most one event,
 * and an event past MCPMGR_MAX_MESSAGE_BYTES (one that never ends, say) stops the watching for the
 * rest of the stream, which goes on to the client unchanged. If that stream then ends early, every
 * request of the POST not seen answered before the oversized event gets its error event (the big
 * event may have answered one; a client ignores an answer to a request it no longer waits for).
 *
 * A 2026-07-28 `subscriptions/listen` stream is the exception when mcpmgr stops: it never ends by
 * itself, so ending it is not a failure. Its request then gets the revision's graceful end (a
 * complete result naming the subscription), as the server would send when it stops.
 */
import { createParser, type EventSourceParser } from "eventsource-parser";
import { JsonRpcCode, type JsonRpcId } from "./jsonrpc.ts";

const encoder = new TextEncoder();
const subscriptionIdKey = "io.modelcontextprotocol/subscriptionId";
/**
 * Ends an event cut short by the break: a line break if needed, then a blank line under an
 * event type no MCP client listens to, so the fragment is dispatched as that type (and
 * ignored) instead of being glued to the error events that follow. At an event boundary it
 * dispatches nothing (no data lines).
 */
const discardPartialEvent = "event: mcpmgr-discarded\n\n";

export interface PendingAnswersOptions {
  /** The largest event watched (MCPMGR_MAX_MESSAGE_BYTES). */
  readonly maxEventBytes: number;
  /** An event was larger: watching stopped (for one log line). */
  readonly onOversized?: (maxEventBytes: number) => void;
  /** The id of the stream's `subscriptions/listen` request, if it answers one (read only at the end). */
  readonly listenId?: () => JsonRpcId | undefined;
}

export class PendingAnswers {
  readonly #requestIds: () => readonly JsonRpcId[];
  readonly #answered = new Set<JsonRpcId>();
  readonly #decoder = new TextDecoder();
  readonly #maxEventBytes: number;
  readonly #onOversized: ((maxEventBytes: number) => void) | undefined;
  readonly #listenId: (() => JsonRpcId | undefined) | undefined;
  #watching = true;
  readonly #parser: EventSourceParser;

  /** `requestIds` is called at most once, when the stream ends early. */
  constructor(requestIds: () => readonly JsonRpcId[], options: PendingAnswersOptions) {
    this.#requestIds = requestIds;
    this.#maxEventBytes = options.maxEventBytes;
    this.#onOversized = options.onOversized;
    this.#listenId = options.listenId;
    this.#parser = createParser({
      maxBufferSize: this.#maxEventBytes,
      onError: (error) => {
        if (error.type !== "max-buffer-size-exceeded") return;
        this.#watching = false;
        this.#onOversized?.(this.#maxEventBytes);
      },
      onEvent: (event) => {
        if (event.event !== undefined && event.event !== "message") return;
        let parsed: unknown;
        try {
          parsed = JSON.parse(event.data);
        } catch {
          return;
        }
        for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
          if (message === null || typeof message !== "object") continue;
          const { id, method } = message as { id?: JsonRpcId; method?: unknown };
          if (method === undefined && id !== undefined) this.#answered.add(id);
        }
      },
    });
  }

  /** Bytes relayed to the client, as they were sent. */
  seen(chunk: Uint8Array): void {
    if (this.#watching) this.#parser.feed(this.#decoder.decode(chunk, { stream: true }));
  }

  /**
   * What closes the stream early: the cut event discarded, then an error event for every
   * request not answered yet. `midLine`: the last byte relayed did not end a line. `stopping`:
   * mcpmgr ends the stream itself (a stop or a restart), which for a listen stream is its graceful end.
   */
  closing(reason: string, midLine: boolean, stopping = false): Uint8Array {
    const owed = this.#requestIds().filter((id) => id !== null && !this.#answered.has(id));
    const listenId = stopping ? this.#listenId?.() : undefined;
    let text = `${midLine ? "\n" : ""}${discardPartialEvent}`;
    for (const id of owed) {
      this.#answered.add(id);
      const answer =
        id === listenId
          ? { jsonrpc: "2.0", id, result: { resultType: "complete", _meta: { [subscriptionIdKey]: id } } }
          : { jsonrpc: "2.0", id, error: { code: JsonRpcCode.internalError, message: reason } };
      text += `event: message\ndata: ${JSON.stringify(answer)}\n\n`;
    }
    return encoder.encode(text);
  }
}

/** The ids of the requests in a JSON-RPC body (a message or a batch); none when it cannot be read. */
export function requestIdsOf(body: ArrayBuffer | Uint8Array | undefined): JsonRpcId[] {
  if (body === undefined || body.byteLength === 0) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(body));
  } catch {
    return [];
  }
  const ids: JsonRpcId[] = [];
  for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
    if (message === null || typeof message !== "object") continue;
    const { id, method } = message as { id?: unknown; method?: unknown };
    if (typeof method === "string" && (typeof id === "string" || typeof id === "number")) ids.push(id);
  }
  return ids;
}

/** The id of a body that is one `subscriptions/listen` request (2026-07-28), else undefined. */
export function listenIdOf(body: ArrayBuffer | Uint8Array | undefined): JsonRpcId | undefined {
  if (body === undefined || body.byteLength === 0) return undefined;
  try {
    const message = JSON.parse(new TextDecoder().decode(body)) as { id?: unknown; method?: unknown } | null;
    const id = message?.id;
    if (message?.method !== "subscriptions/listen") return undefined;
    return typeof id === "string" || typeof id === "number" ? id : undefined;
  } catch {
    return undefined;
  }
}
