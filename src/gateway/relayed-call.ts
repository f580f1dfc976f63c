/**
 * One tools/call relayed past the SDK (pass-through.ts decides which, and builds the request): the
 * exchange with the member on mcpmgr's HTTP/1.1 client, and the client's answer. The member's
 * response goes back with the client's id (and progress token) in place of the gateway's, as JSON
 * or as an event stream as the member framed it (resumed when the member ends it early after an event
 * id: member-stream.ts); other messages on the member's stream (its
 * requests to the client, log messages) go through the session's SDK client, and what the session's
 * server sends back in relation to this call comes out on this call's stream (session-transport.ts).
 * Ends in exactly one way: the member's answer, an error worded as the SDK path worded it (the
 * member failed, or the timeout passed, which progress resets), or a cancellation (the client's
 * notifications/cancelled or disconnect, or the timeout), which the member hears as
 * notifications/cancelled and which leaves the client without an answer, as MCP asks.
 * A 2026-07-28 caller's call (modern-pass-through.ts) runs the same way with its own `CallerEra`:
 * how the member's result and error become the caller's answer, and how the member hears a
 * cancellation (a 2026-07-28 member: its stream closing, nothing more).
 */
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/server";
import { errorMessage } from "../errors.ts";
import { AnswerTooLarge, readBoundedText, readExcerpt } from "../proxy/answer-limit.ts";
import { createEventStream, eventStreamResponse, type EventStream } from "../proxy/event-stream.ts";
import { JsonRpcCode } from "../proxy/jsonrpc.ts";
import { parseExactJson } from "../proxy/stdio-bridge/json-text.ts";
import { type CallerAnswer, type CallerEra, type MemberError, SESSION_ERA } from "./caller-era.ts";
import { readMemberStream } from "./member-stream.ts";
import type { SessionTransport } from "./session-transport.ts";
import type { UpstreamPool } from "./upstream-pool.ts";
import type { Upstream } from "./upstream.ts";
import { isObject } from "../objects.ts";
import type { MemberSend } from "./member-send.ts";
import { failedPostWords, memberErrorForClient } from "./member-words.ts";

type Json = Record<string, unknown>;

/**
 * What both lanes require of a tools/call's params before anything else: an object with a string
 * `name`, and `arguments`, if any, an object without an own `__proto__` key (JSON.parse makes one, the
 * SDK's parse drops it, so a relay of the object as parsed would differ from the SDK path). Each lane
 * then checks what its revision adds (pass-through.ts, modern-pass-through.ts).
 */
export function plainCallParams(params: unknown): params is Json {
  if (!isObject(params) || typeof params.name !== "string") return false;
  const args = params.arguments;
  return args === undefined || (isObject(args) && !Object.hasOwn(args, "__proto__"));
}

export interface RelaySession {
  /** A 2025-era session's transport (its ids, cancellations, what its server sends); a 2026-07-28 caller has none. */
  readonly transport?: SessionTransport | undefined;
  readonly pool: UpstreamPool;
}

export interface RelayTarget {
  readonly workload: string;
  readonly upstream: Upstream;
  /** The client's id, as it wrote it (for the answer). */
  readonly id: RequestId;
  /** The id as parsed: what the session claimed, and what its server relates messages to. */
  readonly key: RequestId;
  readonly upstreamId: string;
  readonly progressToken: string | number | undefined;
  /** The caller's revision (a 2025-era session's when absent). */
  readonly era?: CallerEra;
  /** How requests reach the member (member-send.ts: only while its supervisor lives). */
  readonly send: MemberSend;
}

/** One relayed call: the member's exchange, the client's answer, and what ends either. */
export class RelayedCall {
  readonly #timeoutMs: number;
  readonly #session: RelaySession;
  readonly #req: Request;
  readonly #target: RelayTarget;
  /** The member connection the call is on: a new one once a forgotten session was opened again. */
  #upstream: Upstream;
  #reopened = false;
  readonly #era: CallerEra;
  readonly #abort = new AbortController();
  #stream: EventStream | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #done = false;
  #settle: ((response: Response | undefined) => void) | undefined;
  readonly #cleanups: (() => void)[] = [];

  constructor(timeoutMs: number, session: RelaySession, req: Request, target: RelayTarget) {
    this.#timeoutMs = timeoutMs;
    this.#session = session;
    this.#req = req;
    this.#target = target;
    this.#upstream = target.upstream;
    this.#era = target.era ?? SESSION_ERA;
  }

  async run(url: string, headers: [string, string][], text: string): Promise<Response> {
    const { transport, pool } = this.#session;
    const { workload, key } = this.#target;
    if (transport !== undefined)
      this.#cleanups.push(
        transport.relay(key, {
          cancel: (reason) => this.#cancel(reason ?? "the client cancelled the request"),
          deliver: (message) => this.#deliver(message),
        }),
      );
    this.#cleanups.push(pool.track(workload, key, this.#upstream));
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
    const response = await this.#target.send(url, {
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
      // A 2026-07-28 member refuses a call with 400 and a JSON-RPC error for it (-32021, -32020): its answer,
      // read whole within the answer limit; any other failure only as far as the excerpt it is shown as.
      const refusable = response.status === 400 && this.#era.errorInBadRequest;
      const body = refusable
        ? await readBoundedText(response, this.#session.pool.answerLimit(workload).maxBytes).catch(() => "")
        : await readExcerpt(response, 200);
      const refusal = refusable ? this.#answerIn(body) : undefined;
      if (refusal !== undefined) return this.#finish(refusal);
      // 404: the member forgot the upstream session (it restarted, or the session sat idle past its
      // timeout while the gateway's own lived on). The call was not handled: it goes again, once, on a
      // new session; the next calls use that one too.
      if (response.status === 404) {
        this.#session.pool.forget(workload, this.#upstream);
        const again = await this.#reopen(headers);
        if (again !== undefined) return this.#exchange(url, again, text);
      }
      // Worded as the SDK client words an HTTP failure (gateway-server.ts passes its message on), the
      // member's body cut short: an error message is no place for a large one.
      const words = failedPostWords(response.status, body, this.#session.pool.quotes(workload));
      return this.#failed(`workload '${workload}' failed to answer (${words})`);
    }
    const type = response.headers.get("content-type") ?? "";
    if (type.includes("text/event-stream")) return this.#relayStream(response, url, headers);
    // Held whole to parse, so bounded (MCPMGR_MAX_MESSAGE_BYTES): past it the call fails, the connection is dropped.
    const limit = this.#session.pool.answerLimit(workload);
    const body = await readBoundedText(response, limit.maxBytes).catch((err: unknown) => {
      if (err instanceof AnswerTooLarge) limit.onExceeded?.(err.message);
      throw err;
    });
    const answer = this.#answerIn(body);
    if (answer === undefined) return this.#failed(`workload '${workload}' failed to answer (no answer to the call)`);
    return this.#finish(answer);
  }

  /**
   * The client's event stream, opened on first need: the member streams its answer, or the session's
   * server has a message for this call before the member answered (a request it sent on its own
   * stream), which must reach the client on this call's stream, as through the SDK.
   */
  #openStream(): EventStream {
    if (this.#stream !== undefined) return this.#stream;
    const stream = createEventStream({ onDropped: (bytes) => this.#session.pool.streamDropped(bytes) });
    this.#stream = stream;
    stream.onClose(() => {
      if (!this.#done) this.#cancel("the client went away");
    });
    this.#settle?.(eventStreamResponse(stream, this.#sessionHeader()));
    return stream;
  }

  /**
   * The member answers with an event stream: so does the gateway, event by event. A member that ends
   * its stream early after an event with an id is resumed (member-stream.ts).
   */
  #relayStream(response: Response, url: string, headers: [string, string][]): undefined {
    if (!this.#era.streamsOnlyWhenNeeded) this.#openStream();
    const onData = (data: string) => {
      if (this.#done) return;
      let message: unknown;
      try {
        message = parseExactJson(data);
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
        this.#openStream().send(
          JSON.stringify({ ...progress, params: { ...progress.params, progressToken: this.#target.progressToken } }),
        );
        return;
      }
      if (isObject(message) && this.#era.memberMessage(message, (text) => this.#openStream().send(text))) return;
      // Requests and notifications from the member: through the session's SDK client, as before.
      this.#upstream.transport?.onmessage?.(message as never);
    };
    const { workload } = this.#target;
    const limit = this.#session.pool.answerLimit(workload);
    void readMemberStream(response.body as ReadableStream<Uint8Array>, {
      url,
      limit,
      headers,
      send: this.#target.send,
      resumes: this.#era.resumes,
      signal: this.#abort.signal,
      onData,
      answered: () => this.#done,
      onSessionGone: () => this.#session.pool.forget(workload, this.#upstream),
    }).then(
      (why) => why !== undefined && this.#failed(`workload '${workload}' failed to answer (${why})`),
      (err: unknown) => this.#failed(`workload '${workload}' failed to answer (${errorMessage(err)})`),
    );
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
  #answer(message: unknown): CallerAnswer | undefined {
    if (!isObject(message) || message.id !== this.#target.upstreamId || "method" in message) return undefined;
    if (isObject(message.error)) {
      const { workload } = this.#target;
      const error = message.error as unknown as MemberError;
      return this.#era.error(memberErrorForClient(workload, error, this.#session.pool.quotes(workload)));
    }
    return isObject(message.result) ? this.#era.result(message.result) : undefined;
  }

  /** The answer in a JSON body from the member, or undefined when it holds none for the call. */
  #answerIn(text: string): CallerAnswer | undefined {
    try {
      return this.#answer(parseExactJson(text));
    } catch {
      return undefined;
    }
  }

  #error(code: number, message: string, data?: unknown): CallerAnswer {
    return { error: { code, message, ...(data !== undefined ? { data } : {}) } };
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
  #finish(answer: CallerAnswer): Response | undefined {
    if (this.#done) return undefined;
    this.#end();
    const text = this.#text(answer);
    const stream = this.#stream;
    if (stream !== undefined) {
      stream.send(text);
      stream.close();
      return undefined;
    }
    const response = new Response(text, { status: this.#era.status(answer), headers: this.#jsonHeaders() });
    // Answered from the member's stream before the client's was needed: the answer is this response.
    this.#settle?.(response);
    return response;
  }

  /** The answer as the client gets it: under its own id, as it wrote it. */
  #text(answer: CallerAnswer): string {
    return JSON.stringify({ jsonrpc: "2.0", id: this.#target.id, ...answer });
  }

  /** A message the session's server sends in relation to this call (a member's sampling request, a log line). */
  #deliver(message: JSONRPCMessage): boolean {
    if (this.#done) return false;
    return this.#openStream().send(JSON.stringify(message));
  }

  /**
   * The headers of a call sent on a member session that turned out forgotten, for a new session of
   * the pool's; undefined when the call cannot go again (it went again already, it was sent without a
   * session, it ended meanwhile, or no 2025-era session could be opened).
   */
  async #reopen(headers: [string, string][]): Promise<[string, string][] | undefined> {
    if (this.#reopened || !headers.some(([name]) => name === "mcp-session-id")) return undefined;
    this.#reopened = true;
    const upstream = await this.#session.pool.get(this.#target.workload).catch(() => undefined);
    const transport = upstream?.transport;
    if (
      this.#done ||
      upstream === undefined ||
      upstream.getProtocolEra() !== "legacy" ||
      !(transport instanceof StreamableHTTPClientTransport) ||
      transport.sessionId === undefined
    )
      return undefined;
    this.#upstream = upstream;
    const session: Record<string, string | undefined> = {
      "mcp-session-id": transport.sessionId,
      "mcp-protocol-version": transport.protocolVersion,
    };
    return headers.flatMap(([name, value]): [string, string][] => {
      if (!(name in session)) return [[name, value]];
      const fresh = session[name];
      return fresh === undefined ? [] : [[name, fresh]];
    });
  }

  /**
   * The client cancelled, went away, or the time ran out: the member's stream is closed, and a 2025-era
   * member hears notifications/cancelled (a 2026-07-28 member takes the closed stream for it).
   */
  #cancel(reason: string): void {
    if (this.#done) return;
    this.#end();
    const { upstreamId } = this.#target;
    if (this.#era.notifiesCancellation)
      void this.#upstream
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
      const text = this.#text(answer);
      if (this.#stream !== undefined) this.#stream.send(text);
      else this.#settle?.(new Response(text, { headers: this.#jsonHeaders() }));
      this.#cancel("Request timed out");
    }, this.#timeoutMs);
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
    const sessionId = this.#session.transport?.sessionId;
    return sessionId === undefined ? {} : { "mcp-session-id": sessionId };
  }

  #end(): void {
    this.#done = true;
    clearTimeout(this.#timer);
    for (const cleanup of this.#cleanups.splice(0)) cleanup();
  }
}
