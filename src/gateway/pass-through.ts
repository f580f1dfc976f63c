/**
 * The fast lane for the call the gateway serves most: a 2025-era session's `tools/call` of a tool the
 * catalog routes. Through the SDK, every such call was validated by zod four times (the server's
 * request and result, the client's request and result), sent with `fetch` (a hop to Bun's HTTP
 * thread and back) and answered over web streams. Here the body the policies already parsed is
 * rewritten once (the member's tool name, the gateway's own id and progress token) and POSTed on the
 * member's upstream session with mcpmgr's own HTTP/1.1 client (proxy/upstream/); the member's
 * answer goes back with only its id (and progress token) changed, as JSON or as an event stream as
 * the member framed it.
 *
 * The lane takes a call only when the SDK would have handed it to the gateway's tools/call handler
 * and the handler would have forwarded it: anything else (a header the SDK refuses, params beyond
 * name/arguments/_meta, an unknown or unavailable tool, search mode's own tools and rewritten
 * call_tool calls, a member reached over the deprecated SSE transport or 2026-07-28) returns
 * undefined before anything is sent, and the SDK answers it as before. What the SDK did on the way
 * is kept: the id is claimed in the session (a reused id is refused by the front end), progress
 * reaches the caller under its own token and resets the timeout, a client's notifications/cancelled
 * or disconnect sends notifications/cancelled to the member, requests and log messages the member
 * sends on the call's stream go through the session's SDK client and server as before and come back
 * on this call's stream (session-transport.ts), errors read as they did. The client's id is kept as
 * written, so ids beyond 2^53 and fractional ids are answered as the bridge answers them.
 */
import { isCallToolResult, isJsonContentType, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/server";
import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/server";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createParser } from "eventsource-parser";
import { errorMessage } from "../errors.ts";
import { createEventStream, eventStreamResponse, type EventStream } from "../proxy/event-stream.ts";
import { JsonRpcCode, type JsonRpcId } from "../proxy/jsonrpc.ts";
import type { RpcBody } from "../middleware/rpc-body.ts";
import { defaultUpstreamClient } from "../proxy/upstream/client.ts";
import type { GroupCatalog } from "./catalog.ts";
import type { GatewaySearch } from "./search.ts";
import type { SessionTransport } from "./session-transport.ts";
import type { UpstreamPool } from "./upstream-pool.ts";
import type { Upstream } from "./upstream.ts";

type Json = Record<string, unknown>;

export interface PassThroughOptions {
  readonly catalog: GroupCatalog;
  readonly timeoutMs: number;
  readonly search?: GatewaySearch | undefined;
}

export interface PassThroughSession {
  readonly transport: SessionTransport;
  readonly pool: UpstreamPool;
}

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const jsonWithRaw = JSON as typeof JSON & { rawJSON(text: string): unknown; isRawJSON(value: unknown): boolean };
/** 2025-era revisions the session's SDK transport accepts in MCP-Protocol-Version. */
const legacyVersions = new Set(SUPPORTED_PROTOCOL_VERSIONS.filter((version) => version < "2026"));
const PARAM_KEYS = new Set(["name", "arguments", "_meta"]);
/** The gateway's ids on a member session: strings, which the SDK client (numeric ids) never uses. */
let nextId = 0;

/**
 * The client's id as it wrote it: a number JSON.parse cannot hold exactly (beyond 2^53, fractional)
 * keeps its digits, as raw JSON (typed as the string or number it stands for).
 */
function clientId(id: unknown, text: string): RequestId | undefined {
  if (typeof id === "string" || (typeof id === "number" && Number.isSafeInteger(id))) return id;
  if (typeof id === "object" && id !== null && jsonWithRaw.isRawJSON(id)) return id as unknown as RequestId;
  if (typeof id !== "number") return undefined;
  let source: string | undefined;
  JSON.parse(text, function (this: unknown, key: string, value: unknown, context?: { source?: string }) {
    if (key === "id" && this !== null && typeof this === "object" && "method" in this) source = context?.source;
    return value;
  } as never);
  return (source === undefined ? id : jsonWithRaw.rawJSON(source)) as RequestId;
}

/** A JSON body as the member sent it: integers beyond 2^53 keep their digits. */
function parseExact(text: string): unknown {
  if (!/\d{16}/.test(text)) return JSON.parse(text);
  return JSON.parse(text, ((_key: string, value: unknown, context?: { source?: string }) =>
    typeof value === "number" && !Number.isSafeInteger(value) && /^-?\d+$/.test(context?.source ?? "")
      ? jsonWithRaw.rawJSON(context?.source as string)
      : value) as never);
}

/** The common shape of a tool result (text blocks), checked without a schema library. */
function plainToolResult(result: Json): boolean {
  const content = result.content;
  if (!Array.isArray(content)) return false;
  for (const block of content)
    if (!isObject(block) || block.type !== "text" || typeof block.text !== "string") return false;
  return (
    (result.isError === undefined || typeof result.isError === "boolean") &&
    (result.structuredContent === undefined || isObject(result.structuredContent))
  );
}

/**
 * The tools/call params the lane can relay, or undefined: only what the SDK's request schema surely
 * accepts (name, arguments as an object, _meta as an object with a string or number progress token).
 */
function relayableParams(params: unknown): Json | undefined {
  if (!isObject(params) || typeof params.name !== "string") return undefined;
  for (const key in params) if (!PARAM_KEYS.has(key)) return undefined;
  if (params.arguments !== undefined && !isObject(params.arguments)) return undefined;
  const meta = params._meta;
  if (meta === undefined) return params;
  if (!isObject(meta)) return undefined;
  const token = meta.progressToken;
  if (token !== undefined && typeof token !== "string" && typeof token !== "number") return undefined;
  return params;
}

/** Whether the SDK transport would take this POST as it is (else it answers the error itself). */
function acceptedHeaders(headers: Headers): boolean {
  const accept = headers.get("accept");
  if (!accept?.includes("application/json") || !accept.includes("text/event-stream")) return false;
  if (!isJsonContentType(headers.get("content-type"))) return false;
  const version = headers.get("mcp-protocol-version");
  return version === null || legacyVersions.has(version);
}

/** The member's 2025-era streamable-HTTP session behind an upstream client, or undefined. */
function memberSession(upstream: Upstream): { sessionId?: string; protocolVersion?: string } | undefined {
  if (upstream.getProtocolEra() !== "legacy") return undefined;
  const transport = upstream.transport;
  if (!(transport instanceof StreamableHTTPClientTransport)) return undefined;
  return {
    ...(transport.sessionId !== undefined ? { sessionId: transport.sessionId } : {}),
    ...(transport.protocolVersion !== undefined ? { protocolVersion: transport.protocolVersion } : {}),
  };
}

/**
 * Relays a session's tools/call past the SDK, or undefined when the SDK must answer it. `body` is the
 * POST's body as the policies left it; its id has been claimed in the session by the front end.
 */
export async function passThrough(
  options: PassThroughOptions,
  session: PassThroughSession,
  req: Request,
  body: RpcBody,
): Promise<Response | undefined> {
  const message = body.value;
  if (!isObject(message) || message.method !== "tools/call" || message.jsonrpc !== "2.0") return undefined;
  const params = relayableParams(message.params);
  if (params === undefined || !acceptedHeaders(req.headers)) return undefined;
  const name = params.name as string;
  const { catalog, search } = options;
  if (search !== undefined && !search.routesDirectly(name, req, message.id as JsonRpcId)) return undefined;
  const owned = catalog.view.toolNames.byGatewayName.get(name);
  if (owned === undefined || catalog.whyUnavailable(owned.workload) !== undefined) return undefined;
  const member = catalog.member(owned.workload);
  if (member === undefined) return undefined;
  const id = clientId(message.id, body.text);
  if (id === undefined) return undefined;
  let upstream: Upstream;
  try {
    upstream = await session.pool.get(owned.workload);
  } catch {
    return undefined; // the SDK's handler tries again and words the failure
  }
  const memberSide = memberSession(upstream);
  if (memberSide === undefined) return undefined;

  const upstreamId = `mcpmgr-${++nextId}`;
  const meta = params._meta as Json | undefined;
  const progressToken = meta?.progressToken as string | number | undefined;
  const sent: Json = { ...params, name: owned.name };
  if (progressToken !== undefined) sent._meta = { ...meta, progressToken: upstreamId };
  const headers: [string, string][] = [
    ["content-type", "application/json"],
    ["accept", "application/json, text/event-stream"],
  ];
  if (memberSide.sessionId !== undefined) headers.push(["mcp-session-id", memberSide.sessionId]);
  if (memberSide.protocolVersion !== undefined) headers.push(["mcp-protocol-version", memberSide.protocolVersion]);
  if (member.credential !== undefined) headers.push(["authorization", `Bearer ${member.credential}`]);
  for (const trace of ["traceparent", "tracestate"]) {
    const value = req.headers.get(trace);
    if (value) headers.push([trace, value]);
  }
  return new Relay(options, session, req, {
    workload: owned.workload,
    upstream,
    id,
    key: message.id as RequestId,
    upstreamId,
    progressToken,
  }).run(member.url, headers, JSON.stringify({ jsonrpc: "2.0", id: upstreamId, method: "tools/call", params: sent }));
}

interface RelayTarget {
  readonly workload: string;
  readonly upstream: Upstream;
  /** The client's id, as it wrote it (for the answer). */
  readonly id: RequestId;
  /** The id as parsed: what the session claimed, and what its server relates messages to. */
  readonly key: RequestId;
  readonly upstreamId: string;
  readonly progressToken: string | number | undefined;
}

/** One relayed call: the member's exchange, the client's answer, and what ends either. */
class Relay {
  readonly #options: PassThroughOptions;
  readonly #session: PassThroughSession;
  readonly #req: Request;
  readonly #target: RelayTarget;
  readonly #abort = new AbortController();
  #stream: EventStream | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #done = false;
  #settle: ((response: Response | undefined) => void) | undefined;
  readonly #cleanups: (() => void)[] = [];

  constructor(options: PassThroughOptions, session: PassThroughSession, req: Request, target: RelayTarget) {
    this.#options = options;
    this.#session = session;
    this.#req = req;
    this.#target = target;
  }

  async run(url: string, headers: [string, string][], text: string): Promise<Response> {
    const { transport, pool } = this.#session;
    const { workload, key } = this.#target;
    this.#cleanups.push(
      transport.relay(key, {
        cancel: (reason) => this.#cancel(reason ?? "the client cancelled the request"),
        deliver: (message) => this.#deliver(message),
      }),
      pool.track(workload, key),
    );
    const onClientGone = () => this.#cancel("the client went away");
    this.#req.signal.addEventListener("abort", onClientGone, { once: true });
    this.#cleanups.push(() => this.#req.signal.removeEventListener("abort", onClientGone));
    this.#armTimer();
    // Whatever comes first answers the client: the member's answer, the stream opened for it, the
    // timeout, or a cancellation (undefined: no answer).
    const answered = new Promise<Response | undefined>((resolve) => {
      this.#settle = resolve;
    });
    this.#exchange(url, headers, text).then(
      (response) => response && this.#settle?.(response),
      (err: unknown) => {
        const response = this.#failed(`workload '${workload}' failed to answer (${errorMessage(err)})`);
        if (response) this.#settle?.(response);
      },
    );
    // A call cancelled before the member answered ends with no answer (MCP: none is sent).
    return (await answered) ?? this.#endWithoutAnswer();
  }

  async #exchange(url: string, headers: [string, string][], text: string): Promise<Response | undefined> {
    const { workload } = this.#target;
    const response = await defaultUpstreamClient().fetch(url, {
      method: "POST",
      headers,
      body: text,
      redirect: "manual",
      signal: this.#abort.signal,
    });
    if (this.#done) {
      void response.body?.cancel().catch(() => {});
      return undefined;
    }
    if (!response.ok) {
      const detail = (await response.text().catch(() => "")).slice(0, 200);
      // 404: the workload restarted and forgot the upstream session; the next call opens a new one.
      if (response.status === 404) this.#session.pool.forget(workload);
      return this.#failed(
        `workload '${workload}' failed to answer (HTTP ${response.status}${detail ? `: ${detail}` : ""})`,
      );
    }
    const type = response.headers.get("content-type") ?? "";
    if (type.includes("text/event-stream")) return this.#relayStream(response);
    const answer = this.#answer(parseExact(await response.text()));
    if (answer === undefined) return this.#failed(`workload '${workload}' failed to answer (no answer to the call)`);
    return this.#finish(answer);
  }

  /** The member answers with an event stream: so does the gateway, event by event. */
  /**
   * The client's event stream, opened on first need: the member streams its answer, or the session's
   * server has a message for this call before the member answered (a request it sent on its own
   * stream), which must reach the client on this call's stream, as through the SDK.
   */
  #openStream(): EventStream {
    if (this.#stream !== undefined) return this.#stream;
    const stream = createEventStream();
    this.#stream = stream;
    stream.onClose(() => {
      if (!this.#done) this.#cancel("the client went away");
    });
    this.#settle?.(eventStreamResponse(stream, this.#sessionHeader()));
    return stream;
  }

  #relayStream(response: Response): undefined {
    const stream = this.#openStream();
    const parser = createParser({
      onEvent: (event) => {
        if (this.#done || (event.event !== undefined && event.event !== "message") || event.data === "") return;
        let message: unknown;
        try {
          message = parseExact(event.data);
        } catch {
          return;
        }
        const answer = this.#answer(message);
        if (answer !== undefined) {
          this.#finish(answer);
          return;
        }
        if (this.#isOwnProgress(message)) {
          this.#armTimer();
          const progress = message as { params: Json };
          stream.send(
            JSON.stringify({ ...progress, params: { ...progress.params, progressToken: this.#target.progressToken } }),
          );
          return;
        }
        // Requests and notifications from the member: through the session's SDK client, as before.
        this.#target.upstream.transport?.onmessage?.(message as never);
      },
    });
    void (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of response.body as ReadableStream<Uint8Array>) {
          // Read to its end even once answered: the member ends it, and the connection is kept.
          parser.feed(decoder.decode(chunk, { stream: true }));
        }
      } catch (err) {
        if (!this.#done) this.#failed(`workload '${this.#target.workload}' failed to answer (${errorMessage(err)})`);
      }
      if (!this.#done) this.#failed(`workload '${this.#target.workload}' failed to answer (its stream ended early)`);
    })();
    return undefined;
  }

  #isOwnProgress(message: unknown): boolean {
    return (
      this.#target.progressToken !== undefined &&
      isObject(message) &&
      message.method === "notifications/progress" &&
      isObject(message.params) &&
      message.params.progressToken === this.#target.upstreamId
    );
  }

  /** The client's answer to the member's response, or undefined when `message` is not that response. */
  #answer(message: unknown): Json | undefined {
    if (!isObject(message) || message.id !== this.#target.upstreamId || "method" in message) return undefined;
    const { id } = this.#target;
    if (isObject(message.error)) {
      const { code, message: text, data } = message.error;
      return {
        jsonrpc: "2.0",
        id,
        error: {
          code: Number.isSafeInteger(code) ? code : JsonRpcCode.internalError,
          message: typeof text === "string" ? text : String(text),
          ...(data !== undefined ? { data } : {}),
        },
      };
    }
    if (!isObject(message.result)) return undefined;
    let result = message.result;
    if (!plainToolResult(result)) {
      // What the SDK server did to a tool result: one without content gets an empty one, and one that is
      // no CallToolResult is refused.
      if (result.content === undefined) result = { ...result, content: [] };
      if (!isCallToolResult(result))
        return this.#error(JsonRpcCode.invalidParams, "Invalid tools/call result: not a CallToolResult");
    }
    return { jsonrpc: "2.0", id, result };
  }

  #error(code: number, message: string, data?: unknown): Json {
    return { jsonrpc: "2.0", id: this.#target.id, error: { code, message, ...(data !== undefined ? { data } : {}) } };
  }

  /** The member could not answer: as the SDK path worded it (gateway-server.ts `unavailable`). */
  #failed(why: string): Response | undefined {
    if (this.#done) return undefined;
    return this.#finish(
      this.#error(JsonRpcCode.internalError, `${why}; its tools, prompts and resources are unavailable`, {
        workload: this.#target.workload,
      }),
    );
  }

  /** Sends the client its answer (on the stream when there is one); the Response when there is none yet. */
  #finish(answer: Json): Response | undefined {
    if (this.#done) return undefined;
    this.#end();
    const text = JSON.stringify(answer);
    const stream = this.#stream;
    if (stream !== undefined) {
      stream.send(text);
      stream.close();
      return undefined;
    }
    return new Response(text, { headers: this.#jsonHeaders() });
  }

  /** A message the session's server sends in relation to this call (a member's sampling request, a log line). */
  #deliver(message: JSONRPCMessage): boolean {
    if (this.#done) return false;
    return this.#openStream().send(JSON.stringify(message));
  }

  /** The client cancelled, went away, or the time ran out: the member hears notifications/cancelled. */
  #cancel(reason: string): void {
    if (this.#done) return;
    this.#end();
    const { upstream, upstreamId } = this.#target;
    void upstream
      .notification({ method: "notifications/cancelled", params: { requestId: upstreamId, reason } })
      .catch(() => {});
    this.#abort.abort();
    this.#stream?.close();
    this.#settle?.(undefined);
  }

  #armTimer(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      if (this.#done) return;
      // As the SDK's request timeout read through the gateway: the workload failed to answer in time.
      const answer = this.#error(
        JsonRpcCode.internalError,
        `workload '${this.#target.workload}' failed to answer (Request timed out); its tools, prompts and resources are unavailable`,
        { workload: this.#target.workload },
      );
      const text = JSON.stringify(answer);
      if (this.#stream !== undefined) this.#stream.send(text);
      else this.#settle?.(new Response(text, { headers: this.#jsonHeaders() }));
      this.#cancel("Request timed out");
    }, this.#options.timeoutMs);
  }

  #endWithoutAnswer(): Response {
    const stream = createEventStream();
    stream.close();
    return eventStreamResponse(stream, this.#sessionHeader());
  }

  #jsonHeaders(): Record<string, string> {
    return { "content-type": "application/json", ...this.#sessionHeader() };
  }

  #sessionHeader(): Record<string, string> {
    const sessionId = this.#session.transport.sessionId;
    return sessionId === undefined ? {} : { "mcp-session-id": sessionId };
  }

  #end(): void {
    this.#done = true;
    clearTimeout(this.#timer);
    for (const cleanup of this.#cleanups.splice(0)) cleanup();
  }
}
