/**
 * A 2025-era gateway session's transport: the MCP SDK's, refusing a request whose id is still in
 * flight in the same session. The SDK routes an answer to the stream of the last request that
 * carried its id, so a second request with the same id took over the first one's stream and the
 * first POST never ended (MCP forbids the reuse; a client that reuses gets an error, not a hang).
 */
import {
  type JSONRPCMessage,
  type RequestId,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import type { JsonRpcMessage } from "../proxy/mcp-message.ts";

export class SessionTransport extends WebStandardStreamableHTTPServerTransport {
  readonly #inFlight = new Set<RequestId>();

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
        if (typeof cancelled === "string" || typeof cancelled === "number") this.#inFlight.delete(cancelled);
      }
    }
    for (const id of ids) this.#inFlight.add(id);
    return ids;
  }

  /** Ids claimed for a POST the SDK refused as a whole (it answers none of them). */
  release(ids: readonly RequestId[]): void {
    for (const id of ids) this.#inFlight.delete(id);
  }

  override send(message: JSONRPCMessage, options?: { relatedRequestId?: RequestId }): Promise<void> {
    if ("id" in message && !("method" in message) && message.id !== undefined && message.id !== null)
      this.#inFlight.delete(message.id);
    return super.send(message, options);
  }
}
