/**
 * Why an upstream exchange failed. The forwarder turns these into 502 (or 504) answers
 * with a JSON-RPC error body; `code` names the cause in that answer and in logs.
 */
import type { Socket } from "bun";

export type UpstreamErrorCode =
  /** The response broke HTTP/1.1 framing or syntax (RFC 9112): nothing of it is forwarded. */
  | "UPSTREAM_BAD_RESPONSE"
  /** The response head is larger than the limit. */
  | "UPSTREAM_HEAD_TOO_LARGE"
  /** The connection closed before a complete response head arrived. */
  | "UPSTREAM_CLOSED"
  /** The connection closed (or failed) in the middle of a response body. */
  | "UPSTREAM_BODY_INCOMPLETE"
  /** No TCP (or TLS) connection within the connect timeout. */
  | "UPSTREAM_CONNECT_TIMEOUT"
  /** The TLS handshake failed (certificate not trusted, wrong name, …). */
  | "UPSTREAM_TLS_FAILED";

export class UpstreamError extends Error {
  readonly code: UpstreamErrorCode | string;
  /**
   * The request can be sent again on a fresh connection: it went out on a reused
   * keep-alive connection that turned out to be closed, and not one byte of a
   * response arrived. Whether it *is* sent again also depends on the method and body.
   */
  readonly beforeResponse: boolean;
  /** Not one byte of the request reached the socket. */
  readonly nothingWritten: boolean;

  constructor(
    code: UpstreamErrorCode | string,
    message: string,
    options: { beforeResponse?: boolean; nothingWritten?: boolean; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "UpstreamError";
    this.code = code;
    this.beforeResponse = options.beforeResponse ?? false;
    this.nothingWritten = options.nothingWritten ?? false;
  }
}

/** A response that breaks HTTP/1.1 syntax or framing: the forwarder answers 502. */
export function badResponse(detail: string): UpstreamError {
  return new UpstreamError("UPSTREAM_BAD_RESPONSE", `invalid HTTP response from the upstream: ${detail}`);
}

/** Why a TLS socket was refused (its certificate not trusted, or not for this name), if it was. */
export function tlsFailure(socket: Socket<unknown>): UpstreamError | undefined {
  let reason: Error | null = null;
  try {
    reason = socket.getAuthorizationError();
  } catch {
    return undefined; // not a TLS socket
  }
  if (reason === null) return undefined;
  const code = (reason as { code?: string }).code ?? "UPSTREAM_TLS_FAILED";
  return new UpstreamError(code, `TLS handshake with the upstream failed: ${reason.message}`, { cause: reason });
}
