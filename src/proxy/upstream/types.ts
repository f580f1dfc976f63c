/** The shapes the upstream client's modules share. */
import type { TLSOptions } from "bun";
import type { Cancellation } from "./cancellation.ts";

export interface ConnectTarget {
  readonly hostname: string;
  readonly port: number;
  /** A Unix socket reached instead of hostname:port (an isolated container's relay). */
  readonly unix?: string;
  /** TLS settings, or undefined for plain TCP. */
  readonly tls: TLSOptions | undefined;
}

/** What a connection needs from the pool that owns it (generic, so this module need not import the connection's). */
export interface ConnectionOwner<Connection> {
  release(connection: Connection): void;
  forget(connection: Connection): void;
}

export interface RequestSpec {
  readonly method: string;
  /** Request line and header section, CRLFs included (latin1). */
  readonly head: string;
  /** A whole body (sent with the head) or a stream (sent chunked after it). */
  readonly body: Uint8Array | ReadableStream<Uint8Array> | undefined;
  readonly signal: AbortSignal | undefined;
  /** Stands for `signal` when given (cancellation.ts). */
  readonly cancel: Cancellation | undefined;
}

export interface ConnectionLimits {
  readonly maxHeadBytes: number;
  /** Bodies with a Content-Length up to this are delivered whole rather than streamed. */
  readonly wholeBodyBytes: number;
  /** Bytes queued for a slow reader before the socket stops reading. */
  readonly streamHighWaterMark: number;
}

/** Where a connection went: the listener's address and port. */
export interface ConnectionPeer {
  readonly address: string;
  readonly port: number;
}
