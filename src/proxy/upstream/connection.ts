/**
 * One HTTP/1.1 connection to an upstream over Bun.connect (TCP or TLS), carrying one
 * request at a time (no pipelining). It writes the request, parses the response as the
 * bytes arrive on the JavaScript thread (no hop to another thread, unlike fetch) and
 * hands back a Response:
 *   - small bodies of known length are delivered whole (a plain byte body is the cheapest
 *     thing Bun.serve can send on);
 *   - anything else streams, with backpressure: when the reader falls behind, the socket
 *     stops reading, so a slow client slows the upstream instead of filling memory.
 * A failed, aborted or cut-short exchange destroys the connection; only a connection whose
 * response ended cleanly, with keep-alive, goes back to its pool.
 */
import type { Buffer } from "node:buffer";
import type { Socket, SocketHandler } from "bun";
import { tlsFailure, UpstreamError } from "./errors.ts";
import { type ResponseHead, ResponseParser, type ResponseSink } from "./response-parser.ts";
import { nullBodyStatus, streamedResponse, wholeResponse } from "./responses.ts";
import { closedBeforeSending, closedWhileSending, SocketWriter } from "./socket-writer.ts";
import type { ConnectionLimits, ConnectionOwner, ConnectTarget, RequestSpec } from "./types.ts";

export type { ConnectionLimits, ConnectionOwner, ConnectTarget, RequestSpec } from "./types.ts";

/** One request/response on a connection. */
interface Exchange {
  readonly method: string;
  readonly signal: AbortSignal | undefined;
  resolve(response: Response): void;
  reject(err: unknown): void;
  onAbort: (() => void) | undefined;
  /** The Response was handed out (or the promise rejected). */
  settled: boolean;
  head: ResponseHead | undefined;
  /** Body bytes received before the Response was handed out. */
  chunks: Buffer[];
  bufferedBytes: number;
  stream: ReadableStreamDefaultController<Uint8Array> | undefined;
  /** The whole request (head and body) was written. */
  requestSent: boolean;
  /** Not one byte of this request made it into the socket. */
  nothingWritten: boolean;
}

const handlers: SocketHandler<Http1Connection, "buffer"> = {
  binaryType: "buffer",
  open(socket) {
    socket.data.onOpen(socket);
  },
  data(socket, chunk) {
    socket.data.onData(chunk);
  },
  drain(socket) {
    socket.data.onDrain();
  },
  error(socket, error) {
    socket.data.onError(error);
  },
  close(socket, error) {
    socket.data.onClose(socket, error);
  },
  connectError(socket, error) {
    socket.data.onConnectError(error);
  },
};

export class Http1Connection implements ResponseSink {
  readonly #owner: ConnectionOwner<Http1Connection>;
  readonly #limits: ConnectionLimits;
  readonly #parser: ResponseParser;
  #socket: Socket<Http1Connection> | undefined;
  #exchange: Exchange | undefined;
  #closed = false;
  #paused = false;
  #lastError: Error | undefined;
  readonly #writer = new SocketWriter();
  #connecting: { resolve: () => void; reject: (err: unknown) => void } | undefined;
  /** TLS with certificate verification: an unauthorized peer is refused at `open`. */
  #verifyPeer = false;

  /** At least one response completed on this connection: it is a reused keep-alive connection. */
  reused = false;
  /** When it went back to the pool (performance.now()). */
  idleSince = 0;
  /** How long the upstream keeps it idle (Keep-Alive: timeout), if it said. */
  upstreamIdleMs: number | undefined;

  private constructor(owner: ConnectionOwner<Http1Connection>, limits: ConnectionLimits) {
    this.#owner = owner;
    this.#limits = limits;
    this.#parser = new ResponseParser(this, { maxHeadBytes: limits.maxHeadBytes });
  }

  /** Opens a connection; rejects on refusal, TLS failure, timeout or abort. */
  static open(
    owner: ConnectionOwner<Http1Connection>,
    target: ConnectTarget,
    limits: ConnectionLimits,
    options: { timeoutMs: number; signal: AbortSignal | undefined },
  ): Promise<Http1Connection> {
    const connection = new Http1Connection(owner, limits);
    connection.#verifyPeer = target.tls !== undefined && target.tls.rejectUnauthorized !== false;
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<Http1Connection>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        connection.#connecting = undefined;
      };
      const giveUp = (err: unknown) => {
        done();
        connection.#closed = true;
        connection.#socket?.terminate();
        reject(err);
      };
      const onAbort = () => giveUp(signal?.reason);
      const timer = setTimeout(
        () =>
          giveUp(
            new UpstreamError(
              "UPSTREAM_CONNECT_TIMEOUT",
              `no connection to ${target.hostname}:${target.port} within ${options.timeoutMs} ms`,
            ),
          ),
        options.timeoutMs,
      );
      signal?.addEventListener("abort", onAbort, { once: true });
      connection.#connecting = {
        resolve: () => {
          done();
          resolve(connection);
        },
        reject: (err) => {
          done();
          reject(err);
        },
      };
      Bun.connect<Http1Connection>({
        hostname: target.hostname,
        port: target.port,
        ...(target.tls === undefined ? {} : { tls: target.tls }),
        data: connection,
        socket: handlers,
      }).catch((err: unknown) => connection.onConnectError(err as Error));
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  get busy(): boolean {
    return this.#exchange !== undefined;
  }

  /**
   * Sends a request and resolves with the response once its head (and, for a small body of
   * known length, the whole body) arrived.
   */
  request(spec: RequestSpec): Promise<Response> {
    return new Promise<Response>((resolve, reject) => {
      const exchange: Exchange = {
        method: spec.method,
        signal: spec.signal,
        resolve,
        reject,
        onAbort: undefined,
        settled: false,
        head: undefined,
        chunks: [],
        bufferedBytes: 0,
        stream: undefined,
        requestSent: false,
        nothingWritten: true,
      };
      if (this.#closed || this.#socket === undefined) {
        reject(closedBeforeSending());
        return;
      }
      this.#exchange = exchange;
      this.#parser.expect(spec.method);
      this.#socket.ref();
      if (spec.signal !== undefined) {
        const onAbort = () => this.#abort(exchange, spec.signal?.reason);
        exchange.onAbort = onAbort;
        spec.signal.addEventListener("abort", onAbort, { once: true });
      }
      const body = spec.body;
      if (body === undefined || body instanceof Uint8Array) {
        if (!this.#sent(exchange, this.#writer.writeHead(spec.head, body))) return;
        exchange.requestSent = true;
      } else {
        if (!this.#sent(exchange, this.#writer.writeHead(spec.head, undefined))) return;
        void this.#upload(exchange, body);
      }
    });
  }

  /** Closes the connection at once (the upstream sees the request cancelled). */
  destroy(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#owner.forget(this);
    this.#socket?.terminate();
  }

  /** Marks an idle connection as not keeping the process alive. */
  unref(): void {
    this.#socket?.unref();
  }

  // ------------------------------------------------------------------ socket events

  onOpen(socket: Socket<Http1Connection>): void {
    this.#socket = socket;
    if (this.#closed) {
      socket.terminate(); // given up on while connecting
      return;
    }
    if (this.#verifyPeer && !socket.authorized) {
      // Bun may report the handshake open before it closes an unverified peer: refuse it first.
      const error =
        tlsFailure(socket as Socket<unknown>) ??
        new UpstreamError("UPSTREAM_TLS_FAILED", "the upstream's TLS certificate was not verified");
      this.#closed = true;
      this.#connecting?.reject(error);
      socket.terminate();
      return;
    }
    socket.setNoDelay(true);
    this.#writer.attach(socket as Socket<unknown>);
    this.#connecting?.resolve();
  }

  onConnectError(error: Error): void {
    this.#closed = true;
    this.#connecting?.reject(error);
  }

  onData(chunk: Buffer): void {
    const exchange = this.#exchange;
    if (exchange === undefined) {
      // Bytes nobody asked for: the connection's framing can no longer be trusted.
      this.destroy();
      return;
    }
    try {
      this.#parser.execute(chunk);
    } catch (err) {
      this.#fail(exchange, err);
      return;
    }
    if (this.#parser.done) this.#complete(exchange);
    else if (exchange.head !== undefined && !exchange.settled && !this.#keepBuffering(exchange)) this.#stream(exchange);
  }

  onDrain(): void {
    this.#writer.onDrain();
  }

  onError(error: Error): void {
    this.#lastError = error;
  }

  onClose(socket: Socket<Http1Connection>, error?: Error): void {
    const wasClosed = this.#closed;
    this.#closed = true;
    this.#owner.forget(this);
    const cause = error ?? this.#lastError;
    const connecting = this.#connecting;
    if (connecting !== undefined) {
      // Closed before `open`: with TLS, the handshake failed (untrusted or misnamed certificate).
      const tlsError = this.#socket === undefined ? tlsFailure(socket as Socket<unknown>) : undefined;
      connecting.reject(
        tlsError ?? cause ?? new UpstreamError("UPSTREAM_CLOSED", "the upstream closed the connection at once"),
      );
      return;
    }
    this.#writer.onClose();
    const exchange = this.#exchange;
    if (exchange === undefined || wasClosed) return;
    try {
      this.#parser.finish();
    } catch (err) {
      this.#fail(exchange, withCause(err, cause, exchange));
      return;
    }
    if (this.#parser.done) this.#complete(exchange);
  }

  // ------------------------------------------------------------------ response side

  onHead(head: ResponseHead): void {
    const exchange = this.#exchange as Exchange;
    exchange.head = head;
    if (head.keepAliveTimeoutMs !== undefined) this.upstreamIdleMs = head.keepAliveTimeoutMs;
  }

  onBody(chunk: Buffer): void {
    const exchange = this.#exchange as Exchange;
    const stream = exchange.stream;
    if (stream === undefined) {
      if (nullBodyStatus((exchange.head as ResponseHead).status)) return;
      exchange.chunks.push(chunk);
      exchange.bufferedBytes += chunk.byteLength;
      return;
    }
    stream.enqueue(chunk);
    if (!this.#paused && (stream.desiredSize ?? 1) <= 0) {
      this.#paused = true;
      this.#socket?.pause();
    }
  }

  /** A small body of known length is worth waiting for: it is then sent on as one piece. */
  #keepBuffering(exchange: Exchange): boolean {
    const head = exchange.head as ResponseHead;
    if (nullBodyStatus(head.status)) return true; // whatever it sends is read and dropped
    return head.framing === "length" && head.contentLength <= this.#limits.wholeBodyBytes;
  }

  /** Hands out the Response with a streamed body; the bytes so far are its first chunks. */
  #stream(exchange: Exchange): void {
    let response: Response;
    try {
      response = streamedResponse(
        exchange.head as ResponseHead,
        {
          start: (controller) => {
            exchange.stream = controller;
            for (const chunk of exchange.chunks) controller.enqueue(chunk);
            exchange.chunks = [];
          },
          pull: () => {
            if (this.#paused && this.#exchange === exchange) {
              this.#paused = false;
              this.#socket?.resume();
            }
          },
          cancel: () => {
            // The reader went away (the client disconnected): the upstream must learn it.
            if (this.#exchange === exchange) this.#finishExchange(exchange, false);
          },
        },
        this.#limits.streamHighWaterMark,
      );
    } catch (err) {
      exchange.stream = undefined;
      this.#fail(exchange, err);
      return;
    }
    exchange.settled = true;
    exchange.resolve(response);
  }

  #complete(exchange: Exchange): void {
    const head = exchange.head as ResponseHead;
    const reusable = head.keepAlive && exchange.requestSent && !this.#parser.excess && !this.#closed;
    if (exchange.settled) {
      exchange.stream?.close();
    } else {
      let response: Response;
      try {
        response = wholeResponse(head, exchange.chunks, exchange.bufferedBytes, exchange.method === "HEAD");
      } catch (err) {
        this.#fail(exchange, err);
        return;
      }
      exchange.chunks = [];
      exchange.settled = true;
      exchange.resolve(response);
    }
    this.#finishExchange(exchange, reusable);
  }

  #fail(exchange: Exchange, err: unknown): void {
    if (exchange.settled) {
      try {
        exchange.stream?.error(err);
      } catch {
        // already closed or errored
      }
    } else {
      exchange.settled = true;
      exchange.reject(err);
    }
    this.#finishExchange(exchange, false);
  }

  #abort(exchange: Exchange, reason: unknown): void {
    if (this.#exchange !== exchange) return;
    this.#fail(exchange, reason);
  }

  #finishExchange(exchange: Exchange, reusable: boolean): void {
    if (this.#exchange !== exchange) return;
    this.#exchange = undefined;
    if (exchange.onAbort !== undefined) exchange.signal?.removeEventListener("abort", exchange.onAbort);
    if (this.#paused) {
      this.#paused = false;
      this.#socket?.resume();
    }
    if (reusable) {
      this.reused = true;
      this.#owner.release(this);
    } else {
      this.destroy();
    }
  }

  // ------------------------------------------------------------------ request side

  /** Writes through the writer; false when the socket is gone (the exchange failed). */
  #sent(exchange: Exchange, accepted: boolean): boolean {
    if (!accepted || this.#closed) {
      this.#fail(exchange, exchange.nothingWritten ? closedBeforeSending() : closedWhileSending());
      return false;
    }
    exchange.nothingWritten = false;
    return true;
  }

  /** Streams a request body with chunked framing, waiting whenever the socket is full. */
  async #upload(exchange: Exchange, body: ReadableStream<Uint8Array>): Promise<void> {
    try {
      if (await this.#writer.writeChunked(body, () => this.#exchange === exchange)) exchange.requestSent = true;
    } catch (err) {
      if (this.#exchange === exchange) this.#fail(exchange, err);
    }
  }
}

/** The socket's own error (ECONNRESET, …) keeps its code; the flags say whether a retry is safe. */
function withCause(err: unknown, cause: Error | undefined, exchange: Exchange): unknown {
  if (!(err instanceof UpstreamError)) return err;
  const code = (cause as { code?: string } | undefined)?.code;
  if (code === undefined && !exchange.nothingWritten) return err;
  return new UpstreamError(code ?? err.code, cause === undefined ? err.message : `${err.message} (${cause.message})`, {
    beforeResponse: err.beforeResponse,
    nothingWritten: exchange.nothingWritten,
    cause,
  });
}
