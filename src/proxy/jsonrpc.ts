/**
 * JSON-RPC error responses on the wire. One builder, so every refusal a client sees
 * has the same shape: an HTTP status it can act on and a JSON-RPC body it can parse.
 */

export const JsonRpcCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  /** Generic server error (transport level). */
  serverError: -32000,
  /** Session unknown or expired: MCP clients start a new session on seeing it with 404. */
  sessionNotFound: -32001,
} as const;

export type JsonRpcId = string | number | null;

export function jsonRpcError(
  status: number,
  code: number,
  message: string,
  options: { id?: JsonRpcId; headers?: Record<string, string>; data?: unknown } = {},
): Response {
  const error = options.data === undefined ? { code, message } : { code, message, data: options.data };
  const body = JSON.stringify({ jsonrpc: "2.0", id: options.id ?? null, error });
  const headers = new Headers(options.headers);
  headers.set("content-type", "application/json");
  return new Response(body, { status, headers });
}

/** How long a client refused for want of a free session slot should wait before trying again. */
const sessionRetryAfterSeconds = 10;

/** A new session would exceed MCPMGR_MAX_SESSIONS: 503, with when to try again. */
export function sessionLimitReached(): Response {
  return jsonRpcError(
    503,
    JsonRpcCode.serverError,
    "Service Unavailable: too many open sessions (MCPMGR_MAX_SESSIONS); try again later",
    { headers: { "retry-after": String(sessionRetryAfterSeconds) } },
  );
}

/**
 * The server behind a kept listener is not there (restarting after a crash): 503, when to
 * try again, and a JSON-RPC error clients can show.
 */
export function serverUnavailable(reason: string, retryAfterSeconds: number): Response {
  return jsonRpcError(503, JsonRpcCode.internalError, reason, {
    headers: { "retry-after": String(Math.max(1, Math.ceil(retryAfterSeconds))) },
  });
}
