/**
 * One client connection of mcpmgr's HTTP/1.1 front: it reads request heads and bodies as
 * bytes arrive, hands each request to the handler as a web Request, and writes the Response
 * back (response-writer.ts). Requests on a connection are answered one at a time, in order:
 * bytes of a pipelined request wait until the previous answer is out (and the socket stops
 * reading while too many wait). A client that disconnects aborts its request's signal, so
 * the upstream exchange behind it is cancelled.
 */
import { Buffer } from "node:buffer";
import type { Socket } from "bun";
import { Cancellation } from "../cancellation.ts";
import type { ForwardLane, LaneClient } from "../forward.ts";
import type { RequestContext } from "../handler.ts";
import { WholeAnswer } from "../upstream/responses.ts";
import { SocketWriter } from "../upstream/socket-writer.ts";
import { ChunkedBodyError, RequestBodyReader } from "./request-body.ts";
import { BadRequestHead, parseRequestHead, type RequestHead } from "./request-head.ts";
import { BodyFailedBeforeHead, writeResponse, writeWholeAnswer } from "./response-writer.ts";

export interface Http1Limits {
  readonly maxHeadBytes: number;
  readonly maxHeaderCount: number;
  readonly maxBodyBytes: number;
}

/** What a connection needs from its server. */
export interface ConnectionHost {
  readonly limits: Http1Limits;
  /** Seconds a connection may stay without traffic; 0: no limit. */
  readonly idleTimeoutSeconds: number;
  /** host[:port] for requests without a Host header (HTTP/1.0). */
  readonly defaultHost: string;
  /** The server is stopping: no connection is kept after its current answer. */
  readonly stopping: boolean;
  /** The handler's answer; never rejects (failures become the 500 answer). */
  respond(req: Request, ctx: RequestContext): Promise<Response>;
  /** The byte lane, tried first for a request whose body is whole (forward.ts). */
  readonly lane: ForwardLane | undefined;
  /** The 500 answer, for a body that failed before its head was written. */
  failureResponse(err: unknown): Response;
  requestStarted(): void;
  requestEnded(): void;
  connectionClosed(connection: ClientConnection): void;
}

/** Bodies of known length up to this size are collected before the handler runs. */
const collectBelowBytes = 64 * 1024;
const crlfcrlf = Buffer.from("\r\n\r\n", "latin1");
const continueLine = Buffer.from("HTTP/1.1 100 Continue\r\n\r\n", "latin1");

class ClientDisconnected extends Error {
  override readonly name = "AbortError";
  constructor() {
    super("the client disconnected");
  }
}

interface ActiveRequest {
  readonly head: RequestHead;
  /** Cancelled when the client disconnects (a Request's AbortSignal follows it). */
  readonly abort: Cancellation;
  body: RequestBodyReader | undefined;
}

export class ClientConnection {
  readonly #socket: Socket<ClientConnection>;
  readonly #host: ConnectionHost;
  readonly #writer = new SocketWriter();
  /** Bytes received and not yet used (an incomplete head, or the next pipelined request). */
  #buffer: Buffer | undefined;
  #active: ActiveRequest | undefined;
  #closed = false;
  #paused = false;
  /** Close once the current answer is out. */
  #closeAfterAnswer = false;

  /** The peer's address, read once (each read of socket.remoteAddress asks the kernel). */
  readonly #remoteAddress: string;
  /** keepOpen() turned the idle timeout off for the request under way. */
  #timeoutOff = false;

  constructor(socket: Socket<ClientConnection>, host: ConnectionHost) {
    this.#socket = socket;
    this.#remoteAddress = socket.remoteAddress ?? "";
    this.#host = host;
    this.#writer.attach(socket as Socket<unknown>);
    socket.timeout(host.idleTimeoutSeconds);
  }

  get idle(): boolean {
    return this.#active === undefined;
  }

  onData(chunk: Buffer): void {
    if (this.#closed) return;
    const body = this.#active?.body;
    if (body !== undefined && !body.done) {
      let used: number;
      try {
        used = body.push(chunk);
      } catch (err) {
        this.#refuse(400, err instanceof ChunkedBodyError ? err.message : "malformed request body");
        return;
      }
      if (used < chunk.length) this.#append(chunk.subarray(used));
      return;
    }
    this.#append(chunk);
    if (this.#active === undefined) this.#next();
    else if ((this.#buffer?.length ?? 0) > this.#host.limits.maxHeadBytes) this.#pause();
  }

  onDrain(): void {
    this.#writer.onDrain();
  }

  onClose(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#writer.onClose();
    const active = this.#active;
    if (active !== undefined) {
      active.body?.fail(new ClientDisconnected());
      active.abort.abort(new ClientDisconnected());
    }
    this.#host.connectionClosed(this);
  }

  /** Idle: closed now. Busy: closed after the answer under way. */
  closeWhenIdle(): void {
    if (this.#active === undefined) this.#end();
    else this.#closeAfterAnswer = true;
  }

  terminate(): void {
    if (!this.#closed) this.#socket.terminate();
  }

  #append(bytes: Buffer): void {
    const buffered = this.#buffer;
    this.#buffer = buffered === undefined || buffered.length === 0 ? bytes : Buffer.concat([buffered, bytes]);
  }

  /** Starts the next request in the buffer, if its head is complete. */
  #next(): void {
    let buffer = this.#buffer;
    if (buffer === undefined || this.#closed) return;
    // Empty lines before a request line are ignored (RFC 9112 §2.2).
    let start = 0;
    while (start + 1 < buffer.length && buffer[start] === 0x0d && buffer[start + 1] === 0x0a) start += 2;
    if (start > 0) buffer = this.#buffer = buffer.subarray(start);
    const end = buffer.indexOf(crlfcrlf);
    const limits = this.#host.limits;
    if (end === -1) {
      if (buffer.length > limits.maxHeadBytes) this.#refuse(431, "request head too large");
      else if (hasBareLineFeed(buffer)) this.#refuse(400, "bare LF in the request head");
      return;
    }
    if (end + 4 > limits.maxHeadBytes) {
      this.#refuse(431, "request head too large");
      return;
    }
    let head: RequestHead;
    try {
      head = parseRequestHead(buffer.toString("latin1", 0, end), limits);
    } catch (err) {
      if (err instanceof BadRequestHead) this.#refuse(err.status, err.message);
      else this.#refuse(400, "malformed request head");
      return;
    }
    const rest = buffer.subarray(end + 4);
    this.#buffer = rest.length === 0 ? undefined : rest;
    if (head.framing !== "none" && head.contentLength > limits.maxBodyBytes) {
      this.#refuse(413, "request body too large");
      return;
    }
    this.#start(head);
  }

  #start(head: RequestHead): void {
    const active: ActiveRequest = { head, abort: new Cancellation(), body: undefined };
    this.#active = active;
    this.#host.requestStarted();
    if (head.framing === "none") {
      void this.#dispatch(active, null);
      return;
    }
    if (head.expectContinue) this.#writer.write(continueLine);
    const noBodyAllowed = head.method === "GET" || head.method === "HEAD";
    const framing = {
      chunked: head.framing === "chunked",
      length: head.contentLength,
      maxBodyBytes: this.#host.limits.maxBodyBytes,
    };
    const flow = { pause: () => this.#pause(), resume: () => this.#resume() };
    let reader: RequestBodyReader;
    if (noBodyAllowed) {
      reader = new RequestBodyReader(framing, "discard", flow);
      void this.#dispatch(active, null);
    } else if (!framing.chunked && head.contentLength <= collectBelowBytes) {
      reader = new RequestBodyReader(framing, "collect", flow, (bytes) => void this.#dispatch(active, bytes));
    } else {
      reader = new RequestBodyReader(framing, "stream", flow);
      void this.#dispatch(active, reader.stream as ReadableStream<Uint8Array>);
    }
    active.body = reader;
    const buffered = this.#buffer;
    if (buffered !== undefined) {
      this.#buffer = undefined;
      this.onDataForBody(active, buffered);
    }
  }

  /** Bytes that arrived with the head: the body's, then the next request's. */
  private onDataForBody(active: ActiveRequest, bytes: Buffer): void {
    let used: number;
    try {
      used = (active.body as RequestBodyReader).push(bytes);
    } catch (err) {
      this.#refuse(400, err instanceof ChunkedBodyError ? err.message : "malformed request body");
      return;
    }
    if (used < bytes.length) this.#append(bytes.subarray(used));
  }

  async #dispatch(active: ActiveRequest, body: Uint8Array | ReadableStream<Uint8Array> | null): Promise<void> {
    const head = active.head;
    const socket = this.#socket;
    const keepOpen = () => {
      this.#timeoutOff = true;
      socket.timeout(0);
    };
    let response: Response | WholeAnswer;
    try {
      const lane = this.#host.lane;
      const laned =
        lane === undefined || body instanceof ReadableStream
          ? undefined
          : lane(head, body, {
              remoteAddress: this.#remoteAddress,
              signal: active.abort,
              keepOpen,
            } satisfies LaneClient);
      if (laned !== undefined) response = await laned;
      else {
        const url = `http://${head.host ?? this.#host.defaultHost}${head.target}`;
        const req = new Request(url, {
          method: head.method,
          headers: head.headers,
          body,
          signal: signalFollowing(active.abort),
          duplex: "half",
        });
        response = await this.#host.respond(req, { remoteAddress: this.#remoteAddress, keepOpen });
      }
    } catch (err) {
      // The lane never rejects (its failures are answers); the Request fails for a target the URL parser refuses.
      response = laneOrRequestFailure(err, this.#host);
      this.#closeAfterAnswer = true;
    }
    const bodyReader = active.body;
    const bodyComplete = bodyReader === undefined || bodyReader.done;
    // A body nobody read to its end leaves the connection at an unknown point: close it after the answer.
    if (!bodyComplete) {
      bodyReader?.drop();
      this.#closeAfterAnswer = true;
    }
    let reusable = false;
    if (this.#closed) {
      if (!(response instanceof WholeAnswer)) await response.body?.cancel().catch(() => {});
    } else {
      const target = {
        writer: this.#writer,
        headRequest: head.method === "HEAD",
        minorVersion: head.minorVersion,
        keepAlive: head.keepAlive && !this.#closeAfterAnswer && !this.#host.stopping,
        gone: () => this.#closed,
      };
      try {
        reusable =
          response instanceof WholeAnswer ? writeWholeAnswer(response, target) : await writeResponse(response, target);
      } catch (err) {
        if (err instanceof BodyFailedBeforeHead && !this.#closed) {
          await writeResponse(this.#host.failureResponse(err), { ...target, keepAlive: false }).catch(() => false);
        }
      }
    }
    this.#active = undefined;
    this.#host.requestEnded();
    if (this.#closed) return;
    if (!reusable || this.#host.stopping) {
      this.#end();
      return;
    }
    if (this.#timeoutOff) {
      this.#timeoutOff = false;
      this.#socket.timeout(this.#host.idleTimeoutSeconds);
    }
    this.#resume();
    if (this.#buffer !== undefined) this.#next();
  }

  /** Answers a request that cannot be read and closes the connection (its framing is lost). */
  #refuse(status: number, message: string): void {
    const body = `${message}\n`;
    const reason = refusalReasons[status] ?? "Bad Request";
    this.#writer.write(
      Buffer.from(
        `HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
        "latin1",
      ),
    );
    this.#buffer = undefined;
    const active = this.#active;
    if (active !== undefined) {
      active.body?.fail(new Error(message));
      active.abort.abort(new Error(message));
    }
    this.#end();
  }

  /** Closes once what was written has reached the socket. */
  #end(): void {
    if (this.#closed) return;
    this.#pause();
    if (this.#writer.pendingBytes === 0) this.#socket.end();
    else
      this.#writer.drained().then(
        () => this.#socket.end(),
        () => {},
      );
  }

  #pause(): void {
    if (this.#paused || this.#closed) return;
    this.#paused = true;
    this.#socket.pause();
  }

  #resume(): void {
    if (!this.#paused || this.#closed) return;
    this.#paused = false;
    this.#socket.resume();
  }
}

const refusalReasons: Record<number, string> = {
  400: "Bad Request",
  413: "Content Too Large",
  417: "Expectation Failed",
  431: "Request Header Fields Too Large",
  501: "Not Implemented",
  505: "HTTP Version Not Supported",
};

/** A LF not preceded by CR in an incomplete head: it will never end with CRLFCRLF as it should. */
function hasBareLineFeed(buffer: Buffer): boolean {
  for (let i = buffer.indexOf(0x0a); i !== -1; i = buffer.indexOf(0x0a, i + 1)) {
    if (i === 0 || buffer[i - 1] !== 0x0d) return true;
  }
  return false;
}

/** A Request the URL parser refused is the client's fault (400); anything else is ours (500). */
function laneOrRequestFailure(err: unknown, host: ConnectionHost): Response {
  if (err instanceof TypeError) return new Response("Bad Request", { status: 400 });
  return host.failureResponse(err);
}

/** An AbortSignal for a Request, aborted with the connection's Cancellation. */
function signalFollowing(cancellation: Cancellation): AbortSignal {
  const controller = new AbortController();
  if (cancellation.aborted) controller.abort(cancellation.reason);
  else cancellation.addEventListener("abort", () => controller.abort(cancellation.reason));
  return controller.signal;
}
