/**
 * The HTTP side of `proxy stdio` for MCP 2026-07-28 requests: each request is its own POST
 * to the MCP endpoint — no session, no GET stream — with the headers the revision mirrors
 * from the body; the answer is a JSON body or an SSE stream scoped to that request
 * (notifications first, then the response), relayed message by message. Cancelling a request
 * closes its stream, which is how HTTP says it. An HTTP error without a JSON-RPC body (an
 * older server that wants a session, a gateway) becomes a JSON-RPC error for the request,
 * so a client probing with `server/discover` can fall back to `initialize`. The tools/list
 * answers relayed teach which tool arguments go into `Mcp-Param-*` headers (tool-headers.ts);
 * a call of a tool no list has named yet looks the tool up first.
 */
import { EventSourceParserStream } from "eventsource-parser/stream";
import type { UpstreamFetch } from "../authenticated-fetch.ts";
import type { JsonRpcRequest } from "../mcp-message.ts";
import { mcpRequestHeaders } from "./request-headers.ts";
import { type HeaderDeclaration, ToolHeaderRegistry } from "../tool-headers.ts";
import { isObject } from "../../objects.ts";
import { withHint } from "./relay-failures.ts";

type Id = JsonRpcRequest["id"];

/** JSON-RPC's implementation-defined range: not an MCP error a client would act on. */
export const TRANSPORT_ERROR = -32000;
/** tools/list pages read to find one tool's header declarations. */
const MAX_LIST_PAGES = 20;

export interface StatelessRequestsOptions {
  readonly url: URL;
  readonly fetch: UpstreamFetch;
  /** A message for the stdio client (responses and the request's notifications). */
  readonly deliver: (message: Record<string, unknown>) => void;
  readonly warn: (text: string) => void;
  /**
   * For a workload (`proxy stdio NAME`), after a request failed with `err` before any answer: looks the workload
   * up again when `err` says it is gone from where the request went (stdio-relay.ts), and resolves whether the
   * request may be sent once more, to where it serves now: only when it was refused before it was sent. Rejects
   * with why the workload cannot be reached (stopped: how to start it).
   */
  readonly followAfter?: (err: unknown) => Promise<boolean>;
}

function isResponse(message: unknown): message is Record<string, unknown> {
  return isObject(message) && ("result" in message || "error" in message) && !("method" in message);
}

export class StatelessRequests {
  readonly #options: StatelessRequestsOptions;
  readonly #inFlight = new Map<Id, AbortController>();
  readonly #tools = new ToolHeaderRegistry();
  #lookups = 0;

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
    for (let attempt = 0; ; attempt++) {
      try {
        const declarations =
          request.method === "tools/call" ? await this.#declarationsFor(request, version, controller.signal) : [];
        const outcome = await this.#exchange(request, version, declarations, controller.signal, this.#options.deliver);
        return answer(
          typeof outcome === "string"
            ? { jsonrpc: "2.0", id: request.id, error: { code: TRANSPORT_ERROR, message: outcome } }
            : outcome,
        );
      } catch (err) {
        if (controller.signal.aborted) return;
        // Once: a workload that moved away again at once is said, not chased.
        const again = attempt === 0 ? await this.#followAfter(err) : { resend: false, why: err };
        if (controller.signal.aborted) return;
        if (again.resend) continue;
        const text = `mcpmgr could not reach the remote MCP server: ${withHint(again.why)}`;
        return answer({ jsonrpc: "2.0", id: request.id, error: { code: TRANSPORT_ERROR, message: text } });
      }
    }
  }

  async #followAfter(err: unknown): Promise<{ resend: boolean; why: unknown }> {
    if (this.#options.followAfter === undefined) return { resend: false, why: err };
    try {
      return { resend: await this.#options.followAfter(err), why: err };
    } catch (unreachable) {
      return { resend: false, why: unreachable };
    }
  }

  /**
   * One request's POST: its notifications go to `notify` as they come, then its response is
   * returned, or why there is none (HTTP errors without a JSON-RPC body, a stream that ended).
   */
  async #exchange(
    request: JsonRpcRequest,
    version: string,
    declarations: readonly HeaderDeclaration[],
    signal: AbortSignal,
    notify: (message: Record<string, unknown>) => void,
  ): Promise<Record<string, unknown> | string> {
    const response = await this.#options.fetch(this.#options.url.href, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...mcpRequestHeaders(request, version, declarations),
      },
      body: JSON.stringify(request),
      signal,
      // A subscriptions/listen stream stays open for as long as the client wants it.
      timeout: false,
    });
    const type = response.headers.get("content-type") ?? "";
    if (response.body !== null && type.startsWith("text/event-stream")) {
      const answer = await this.#readStream(request, response.body, notify, signal);
      return answer ?? "the remote MCP server ended its response stream without answering; send the request again";
    }
    const text = await response.text();
    const body = text === "" ? undefined : parseJson(text);
    if (isResponse(body)) return { ...body, id: body.id ?? request.id };
    return response.ok
      ? `the remote MCP server answered HTTP ${response.status} without a JSON-RPC response`
      : `the remote MCP server answered HTTP ${response.status}${text ? `: ${text.slice(0, 200)}` : ""}`;
  }

  /**
   * What a tools/call must mirror into headers. A tool no tools/list has named yet (the client
   * kept its list from an earlier run, as 2026-07-28 caching invites) is looked up first with
   * tools/list pages in the call's own envelope: without its declarations the remote would
   * refuse the call for missing headers.
   */
  async #declarationsFor(
    request: JsonRpcRequest,
    version: string,
    signal: AbortSignal,
  ): Promise<readonly HeaderDeclaration[]> {
    const name = request.params?.name;
    let cursor: unknown;
    for (let page = 0; page < MAX_LIST_PAGES && !this.#tools.knows(name); page++) {
      const list: JsonRpcRequest = {
        jsonrpc: "2.0",
        id: `mcpmgr-tools-${++this.#lookups}`,
        method: "tools/list",
        params: { ...(typeof cursor === "string" ? { cursor } : {}), _meta: envelopeOf(request) },
      };
      const outcome = await this.#exchange(list, version, [], signal, () => {});
      const result = typeof outcome === "string" ? undefined : outcome.result;
      if (!isObject(result)) break;
      this.#tools.learn(result);
      cursor = result.nextCursor;
      if (typeof cursor !== "string") break;
    }
    return this.#tools.declarationsOf(name);
  }

  async #readStream(
    request: JsonRpcRequest,
    body: ReadableStream<Uint8Array>,
    notify: (message: Record<string, unknown>) => void,
    signal: AbortSignal,
  ): Promise<Record<string, unknown> | undefined> {
    const events = body
      .pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>)
      .pipeThrough(new EventSourceParserStream());
    const reader = events.getReader();
    const stop = () => void reader.cancel().catch(() => {});
    signal.addEventListener("abort", stop, { once: true });
    try {
      for (;;) {
        const { value: event, done } = await reader.read();
        if (done) return undefined;
        if (event.data === "" || (event.event !== undefined && event.event !== "message")) continue;
        const message = parseJson(event.data);
        // The response ends the request's stream (the server SHOULD close it; mcpmgr does not wait).
        if (isResponse(message)) return { ...message, id: message.id ?? request.id };
        if (isObject(message) && typeof message.method === "string") {
          if ("id" in message) {
            this.#options.warn(
              `the remote sent a request (${message.method}) on a 2026-07-28 response stream; ignored`,
            );
            continue;
          }
          notify(message);
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

/** The 2026-07-28 envelope of a request's `_meta` (protocol version, client info and capabilities). */
function envelopeOf(request: JsonRpcRequest): Record<string, unknown> {
  const meta = request.params?._meta;
  const envelope: Record<string, unknown> = {};
  if (isObject(meta))
    for (const [key, value] of Object.entries(meta))
      if (key.startsWith("io.modelcontextprotocol/") && key !== "io.modelcontextprotocol/logLevel")
        envelope[key] = value;
  return envelope;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
