/**
 * A remote that speaks only MCP 2026-07-28, seen as the stdio bridge sees its server (a
 * ServerChannel): each request the bridge sends becomes its own stateless POST
 * (stateless-requests.ts), and what comes back on its response stream (the request's
 * notifications, then its answer) is handed to the bridge. `notifications/cancelled` closes
 * the request's stream, which is how HTTP cancels; the revision has no other client
 * notification over HTTP, and a server that makes no requests of its client needs no responses.
 *
 * The bridge's own `subscriptions/listen` streams (list changes, resource updates) last as
 * long as the stdio client, while an HTTP stream may be dropped by the remote, a restart, or
 * an idle timeout on the way: a listen stream that ends is opened again, under the same id
 * (the bridge knows its notifications by it), after a pause that doubles up to a bound until
 * the remote acknowledges it again. Only a remote that refuses it (a JSON-RPC error of its
 * own) is not asked again.
 */
import type { UpstreamFetch } from "../authenticated-fetch.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import type { ServerChannel } from "../stdio-bridge/server-channel.ts";
import { modernVersionOf } from "./request-headers.ts";
import type { JsonRpcRequest } from "../mcp-message.ts";
import { StatelessRequests, TRANSPORT_ERROR } from "./stateless-requests.ts";

const SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId";
const FIRST_REOPEN_MS = 1_000;
const MAX_REOPEN_MS = 30_000;

export interface StatelessChannelOptions {
  readonly url: URL;
  readonly fetch: UpstreamFetch;
  readonly warn: (text: string) => void;
  /** The protocol version of requests whose `_meta` names none (the bridge always names one). */
  readonly version: string;
  /** The first pause before a dropped listen stream is opened again (default 1 s). */
  readonly reopenAfterMs?: number;
}

interface Listen {
  readonly request: JsonRpcRequest;
  /** The pause before the stream is opened again when it ends. */
  delayMs: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

export class StatelessChannel implements ServerChannel {
  readonly closed: Promise<void>;
  /** Where the remote's messages go (the bridge's onServerMessage). */
  onMessage: (message: unknown) => void = () => {};
  readonly #requests: StatelessRequests;
  readonly #listens = new Map<string | number, Listen>();
  readonly #options: StatelessChannelOptions;
  readonly #firstReopenMs: number;
  #close!: () => void;
  #isClosed = false;

  constructor(options: StatelessChannelOptions) {
    this.#options = options;
    this.#firstReopenMs = options.reopenAfterMs ?? FIRST_REOPEN_MS;
    this.closed = new Promise((resolve) => {
      this.#close = resolve;
    });
    this.#requests = new StatelessRequests({
      url: options.url,
      fetch: options.fetch,
      deliver: (message) => this.#deliver(message),
      warn: options.warn,
    });
  }

  send(message: JsonRpcMessage): void {
    if (this.#isClosed) return;
    if (typeof message.method !== "string") return; // a response: the remote asks nothing of its client
    if (message.id === undefined) {
      if (message.method === "notifications/cancelled") this.#cancel(message.params?.requestId);
      return;
    }
    const request = message as JsonRpcRequest;
    if (request.method === "subscriptions/listen")
      this.#listens.set(request.id, { request, delayMs: this.#firstReopenMs, timer: undefined });
    void this.#requests.send(request, modernVersionOf(request) ?? this.#options.version);
  }

  /** Ends every request and listen stream; `closed` resolves. */
  close(): void {
    if (this.#isClosed) return;
    this.#isClosed = true;
    for (const listen of this.#listens.values()) clearTimeout(listen.timer);
    this.#listens.clear();
    this.#requests.abortAll();
    this.#close();
  }

  #cancel(id: unknown): void {
    if (typeof id === "string" || typeof id === "number") {
      clearTimeout(this.#listens.get(id)?.timer);
      this.#listens.delete(id);
    }
    this.#requests.cancel(id);
  }

  #deliver(message: Record<string, unknown>): void {
    if (this.#isClosed) return;
    const id = message.id as string | number | undefined;
    const listen = id !== undefined && typeof message.method !== "string" ? this.#listens.get(id) : undefined;
    if (listen !== undefined) return this.#listenEnded(listen, message);
    if (message.method === "notifications/subscriptions/acknowledged") {
      const params = message.params as { _meta?: Record<string, unknown> } | undefined;
      const acknowledged = this.#listens.get(params?._meta?.[SUBSCRIPTION_ID] as string | number);
      if (acknowledged !== undefined) acknowledged.delayMs = this.#firstReopenMs;
    }
    this.onMessage(message);
  }

  /** A listen stream's answer: the stream is over, and opened again unless the remote refused it. */
  #listenEnded(listen: Listen, answer: Record<string, unknown>): void {
    const error = answer.error as { code?: unknown; message?: unknown } | undefined;
    if (error !== undefined && error.code !== TRANSPORT_ERROR) {
      // Asking again would be refused again.
      this.#listens.delete(listen.request.id);
      this.#options.warn(
        `the remote did not open a subscriptions/listen stream (${String(error.message ?? "refused")}); list changes and resource updates will not reach the client`,
      );
      this.onMessage(answer);
      return;
    }
    // Reset by the next acknowledgment; until then a remote that cannot be reached is asked less and less often.
    const delay = listen.delayMs;
    listen.delayMs = Math.min(delay * 2, MAX_REOPEN_MS);
    listen.timer = setTimeout(() => {
      listen.timer = undefined;
      if (this.#isClosed || this.#listens.get(listen.request.id) !== listen) return;
      void this.#requests.send(listen.request, modernVersionOf(listen.request) ?? this.#options.version);
    }, delay);
    listen.timer.unref?.();
  }
}
