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
import { ConnectAttempt } from "./connect.ts";
import { tlsFailure, UpstreamError } from "./errors.ts";
import { Exchange, withCause } from "./exchange.ts";
import { type ResponseHead, ResponseParser, type ResponseSink } from "./response-parser.ts";
import { closedBeforeSending, closedWhileSending, SocketWriter } from "./socket-writer.ts";
import type { ConnectionLimits, ConnectionOwner, ConnectionPeer, ConnectTarget, RequestSpec } from "./types.ts";

export type { ConnectionLimits, ConnectionOwner, ConnectTarget, RequestSpec } from "./types.ts";

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
  #connecting: ConnectAttempt | undefined;
  /** The socket Bun.connect gave before `open` (a TLS handshake under way): closed if the attempt is given up. */
  #handshaking: Socket<Http1Connection> | undefined;
  /** TLS with certificate verification: an unauthorized peer is refused at `open`. */
  #verifyPeer = false;

  /** At least one response completed on this connection: it is a reused keep-alive connection. */
  reused = false;
  /** When it went back to the pool (performance.now()). */
  idleSince = 0;
  /** How long the upstream keeps it idle (Keep-Alive: timeout), if it said. */
  upstreamIdleMs: number | undefined;
  /** The listener's process `checkConnection` admitted it for (UpstreamInit `listenerPid`), if one was named. */
  listenerPid: number | undefined;

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
    if (options.signal?.aborted) return Promise.reject(options.signal.reason);
    const attempt = new ConnectAttempt(target, options, () => {
      connection.#closed = true;
      (connection.#socket ?? connection.#handshaking)?.terminate();
    });
    connection.#connecting = attempt;
    const tls = target.tls === undefined ? {} : { tls: target.tls };
    const opened =
      target.unix === undefined
        ? Bun.connect<Http1Connection>({
            hostname: target.hostname,
            port: target.port,
            ...tls,
            data: connection,
            socket: handlers,
          })
        : Bun.connect<Http1Connection>({ unix: target.unix, ...tls, data: connection, socket: handlers });
    opened.then(
      (socket) => {
        // With TLS this is the TCP connection, before `open` (the handshake): given up on meanwhile,
        // or later, it must be closed here, else an upstream that never finishes the handshake keeps it.
        if (connection.#closed) socket.terminate();
        else if (connection.#socket === undefined) connection.#handshaking = socket;
      },
      (err: unknown) => connection.onConnectError(err as Error),
    );
    return attempt.promise.then(() => connection);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The address and port the connection reached (none over a unix socket). */
  get peer(): ConnectionPeer | undefined {
    const socket = this.#socket;
    if (socket === undefined || socket.remoteAddress === "" || socket.remotePort === undefined) return undefined;
    return { address: socket.remoteAddress, port: socket.remotePort };
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
      const exchange = new Exchange(spec, resolve, reject);
      if (this.#closed || this.#socket === undefined) {
        reject(closedBeforeSending());
        return;
      }
      this.#exchange = exchange;
      this.#parser.expect(spec.method);
      this.#socket.ref();
      const cancel = spec.cancel;
      if (cancel !== undefined) {
        const onAbort = () => this.#abort(exchange, cancel.reason);
        exchange.onAbort = onAbort;
        cancel.listen(onAbort);
      } else if (spec.signal !== undefined) {
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
    this.#handshaking = undefined;
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
    else if (
      exchange.head !== undefined &&
      !exchange.settled &&
      !exchange.waitsForWholeBody(this.#limits.wholeBodyBytes)
    )
      this.#stream(exchange);
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
    this.#handshaking = undefined;
    this.#owner.forget(this);
    const cause = error ?? this.#lastError;
    const connecting = this.#connecting;
    if (connecting !== undefined && !connecting.settled) {
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
    const full = (this.#exchange as Exchange).receive(chunk);
    if (full && !this.#paused) {
      this.#paused = true;
      this.#socket?.pause();
    }
  }

  /** Hands out the Response with a streamed body (backpressure: a full reader pauses the socket). */
  #stream(exchange: Exchange): void {
    try {
      exchange.handOutStream(this.#limits.streamHighWaterMark, {
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
      });
    } catch (err) {
      this.#fail(exchange, err);
    }
  }

  #complete(exchange: Exchange): void {
    const head = exchange.head as ResponseHead;
    const reusable = head.keepAlive && exchange.requestSent && !this.#parser.excess && !this.#closed;
    try {
      exchange.complete();
    } catch (err) {
      this.#fail(exchange, err);
      return;
    }
    this.#finishExchange(exchange, reusable);
  }

  #fail(exchange: Exchange, err: unknown): void {
    exchange.fail(err);
    this.#finishExchange(exchange, false);
  }

  #abort(exchange: Exchange, reason: unknown): void {
    if (this.#exchange !== exchange) return;
    this.#fail(exchange, reason);
  }

  #finishExchange(exchange: Exchange, reusable: boolean): void {
    if (this.#exchange !== exchange) return;
    this.#exchange = undefined;
    const onAbort = exchange.onAbort;
    if (onAbort !== undefined) {
      if (exchange.cancel !== undefined) exchange.cancel.unlisten(onAbort);
      else exchange.signal?.removeEventListener("abort", onAbort);
    }
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
