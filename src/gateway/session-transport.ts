/**
 * A 2025-era gateway session's transport: the MCP SDK's, refusing a request whose id is still in
 * flight in the same session. The SDK routes an answer to the stream of the last request that
 * carried its id, so a second request with the same id took over the first one's stream and the
 * first POST never ended (MCP forbids the reuse; a client that reuses gets an error, not a hang).
 * It also knows the tools/call requests the gateway relays past the SDK (pass-through.ts): a
 * client's notifications/cancelled for one of them reaches its relay, and what the session's
 * server sends in relation to one (a workload's sampling or log message) goes on that relay's stream.
 * When the session ends (the client's DELETE, idle expiry, the gateway stopping), its relayed calls are
 * cancelled, as the SDK's closing cancels the calls it serves.
 */
import {
  type JSONRPCMessage,
  type RequestId,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import type { JsonRpcMessage } from "../proxy/mcp-message.ts";

/** A request relayed past the SDK, as the transport sees it. */
export interface RelayedRequest {
  /** The client cancelled it (notifications/cancelled). */
  cancel(reason: string | undefined): void;
  /** Writes a message related to it on its stream; false when it has none (then the session's own stream takes it). */
  deliver(message: JSONRPCMessage): boolean;
}

export class SessionTransport extends WebStandardStreamableHTTPServerTransport {
  readonly #inFlight = new Set<RequestId>();
  readonly #relayed = new Map<RequestId, RelayedRequest>();

  /**
   * Claims the ids of the requests in `messages` (a POST's body) and releases those of the
   * cancellations; the id already in flight (nothing claimed) when there is one.
   */
  claim(messages: readonly JsonRpcMessage[]): { readonly duplicate: RequestId } | RequestId[] {
    const ids: RequestId[] = [];
    for (const message of messages) {
      const id: unknown = message.id;
      if (typeof message.method !== "string") continue;
      if (typeof id === "string" || typeof id === "number") {
        if (this.#inFlight.has(id) || ids.includes(id)) return { duplicate: id };
        ids.push(id);
      } else if (message.method === "notifications/cancelled") {
        const cancelled = message.params?.requestId;
        if (typeof cancelled === "string" || typeof cancelled === "number") {
          this.#inFlight.delete(cancelled);
          const reason = message.params?.reason;
          this.#relayed.get(cancelled)?.cancel(typeof reason === "string" ? reason : undefined);
        }
      }
    }
    for (const id of ids) this.#inFlight.add(id);
    return ids;
  }

  /** Whether a request of the session is in progress (such a session never gives way to a new one). */
  get busy(): boolean {
    return this.#inFlight.size > 0;
  }

  /** Ids claimed for a POST the SDK refused as a whole (it answers none of them), or a relayed request that ended. */
  release(ids: readonly RequestId[]): void {
    for (const id of ids) this.#inFlight.delete(id);
  }

  /** A tools/call relayed past the SDK under `id` (claimed): until the returned function is called. */
  relay(id: RequestId, request: RelayedRequest): () => void {
    this.#relayed.set(id, request);
    return () => {
      if (this.#relayed.get(id) === request) this.#relayed.delete(id);
      this.#inFlight.delete(id);
    };
  }

  override async close(): Promise<void> {
    const relayed = [...this.#relayed.values()];
    this.#relayed.clear();
    for (const request of relayed) request.cancel("the session ended");
    await super.close();
  }

  override send(message: JSONRPCMessage, options?: { relatedRequestId?: RequestId }): Promise<void> {
    const related = options?.relatedRequestId;
    const relayed = related === undefined ? undefined : this.#relayed.get(related);
    if (relayed !== undefined) return relayed.deliver(message) ? Promise.resolve() : super.send(message);
    if ("id" in message && !("method" in message) && message.id !== undefined && message.id !== null)
      this.#inFlight.delete(message.id);
    return super.send(message, options);
  }
}
