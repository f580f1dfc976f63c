/**
 * The HTTP side of `proxy stdio` for MCP 2026-07-28 requests: each request is its own POST
 * to the MCP endpoint — no session, no GET stream — with the headers the revision mirrors
 * from the body; the answer is a JSON body or an SSE stream scoped to that request
 * (notifications first, then the response), relayed message by message. Cancelling a request
 * closes its stream, which is how HTTP says it. An HTTP error without a JSON-RPC body (an
 * older server that wants a session, a gateway) becomes a JSON-RPC error for the request,
 * so a client probing with `server/discover` can fall back to `initialize`.
 */
import { EventSourceParserStream } from "eventsource-parser/stream";
import type { UpstreamFetch } from "../authenticated-fetch.ts";
import { mcpRequestHeaders } from "./request-headers.ts";
import { ToolHeaderRegistry } from "./tool-headers.ts";

type Id = string | number;

export interface JsonRpcRequest {
  readonly jsonrpc: "2.0";
  readonly id: Id;
  readonly method: string;
  readonly params?: Record<string, unknown>;
}

/** JSON-RPC's implementation-defined range: not an MCP error a client would act on. */
const TRANSPORT_ERROR = -32000;

export interface StatelessRequestsOptions {
  readonly url: URL;
  readonly fetch: UpstreamFetch;
  /** A message for the stdio client (responses and the request's notifications). */
  readonly deliver: (message: Record<string, unknown>) => void;
  readonly warn: (text: string) => void;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function isResponse(message: unknown): message is Record<string, unknown> {
  return isObject(message) && ("result" in message || "error" in message) && !("method" in message);
}

export class StatelessRequests {
  readonly #options: StatelessRequestsOptions;
  readonly #inFlight = new Map<Id, AbortController>();
  readonly #tools = new ToolHeaderRegistry();

  constructor(options: StatelessRequestsOptions) {
    this.#options = options;
  }

  /** Requests sent and not answered yet. */
  get pending(): number {
    return this.#inFlight.size;
  }

  /** Whether `id` is one of ours in flight; if so its stream is closed and no answer follows. */
  cancel(id: unknown): boolean {
    const controller = typeof id === "string" || typeof id === "number" ? this.#inFlight.get(id) : undefined;
    if (controller === undefined) return false;
    this.#inFlight.delete(id as Id);
    controller.abort();
    return true;
  }

  abortAll(): void {
    for (const controller of this.#inFlight.values()) controller.abort();
    this.#inFlight.clear();
  }

  /** Sends one request with the version its `_meta` declares; resolves once it is answered (or given up). */
  async send(request: JsonRpcRequest, version: string): Promise<void> {
    const controller = new AbortController();
    this.#inFlight.set(request.id, controller);
    const answer = (message: Record<string, unknown>) => {
      // A cancelled request gets no answer, whatever arrives late.
      if (this.#inFlight.get(request.id) !== controller) return;
      this.#inFlight.delete(request.id);
      this.#options.deliver(this.#relayable(request, message));
    };
    const fail = (text: string) =>
      answer({ jsonrpc: "2.0", id: request.id, error: { code: TRANSPORT_ERROR, message: text } });
    try {
      const declarations = request.method === "tools/call" ? this.#tools.declarationsOf(request.params?.name) : [];
      const response = await this.#options.fetch(this.#options.url.href, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...mcpRequestHeaders(request, version, declarations),
        },
        body: JSON.stringify(request),
        signal: controller.signal,
        // A subscriptions/listen stream stays open for as long as the client wants it.
        timeout: false,
      });
      const type = response.headers.get("content-type") ?? "";
      if (response.body !== null && type.startsWith("text/event-stream")) {
        await this.#readStream(request, response.body, answer, controller.signal);
        if (this.#inFlight.get(request.id) === controller)
          fail("the remote MCP server ended its response stream without answering; send the request again");
        return;
      }
      const text = await response.text();
      const body = text === "" ? undefined : parseJson(text);
      if (isResponse(body)) return answer({ ...body, id: body.id ?? request.id });
      fail(
        response.ok
          ? `the remote MCP server answered HTTP ${response.status} without a JSON-RPC response`
          : `the remote MCP server answered HTTP ${response.status}${text ? `: ${text.slice(0, 200)}` : ""}`,
      );
    } catch (err) {
      if (controller.signal.aborted) return;
      fail(`mcpmgr could not reach the remote MCP server: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  async #readStream(
    request: JsonRpcRequest,
    body: ReadableStream<Uint8Array>,
    answer: (message: Record<string, unknown>) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const events = body
      .pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>)
      .pipeThrough(new EventSourceParserStream());
    const reader = events.getReader();
    const stop = () => void reader.cancel().catch(() => {});
    signal.addEventListener("abort", stop, { once: true });
    try {
      for (;;) {
        const { value: event, done } = await reader.read();
        if (done) return;
        if (event.data === "" || (event.event !== undefined && event.event !== "message")) continue;
        const message = parseJson(event.data);
        if (isResponse(message)) {
          answer({ ...message, id: message.id ?? request.id });
          // The response ends the request's stream (the server SHOULD close it; mcpmgr does not wait).
          return;
        }
        if (isObject(message) && typeof message.method === "string") {
          if ("id" in message) {
            this.#options.warn(
              `the remote sent a request (${message.method}) on a 2026-07-28 response stream; ignored`,
            );
            continue;
          }
          this.#options.deliver(message);
        }
      }
    } finally {
      signal.removeEventListener("abort", stop);
      stop();
    }
  }

  /** tools/list answers teach the x-mcp-header declarations and lose the tools that break their rules. */
  #relayable(request: JsonRpcRequest, message: Record<string, unknown>): Record<string, unknown> {
    if (request.method !== "tools/list" || !("result" in message)) return message;
    const { result, excluded } = this.#tools.learn(message.result);
    for (const text of excluded) this.#options.warn(text);
    return excluded.length === 0 ? message : { ...message, result };
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
