/**
 * What the transparent forwarder answers when the upstream does not (forward.ts): the client
 * gone (499, for logs), a method it never forwards (405), no response head in time (504), a
 * graceful stop (503), a response it cannot read or one that broke off (502), an upstream it
 * cannot reach (502). Each but the first is a JSON-RPC error the client can show.
 */
import { JsonRpcCode, jsonRpcError } from "./jsonrpc.ts";
import { UpstreamError } from "./upstream/errors.ts";

/** The upstream sent no response head within the forwarder's headers timeout. */
export class UpstreamTimeout extends Error {
  constructor() {
    super("the upstream MCP server did not answer in time");
  }
}

/** A graceful stop (or a restart) ended the wait; the reason is LiveStreams.closeAll's. */
export class ShuttingDown extends Error {}

/** The upstream's answer ended before its body was whole. */
export function brokenBody(): Response {
  return jsonRpcError(
    502,
    JsonRpcCode.internalError,
    "the upstream MCP server's answer broke off before it was complete",
  );
}

/** Methods no HTTP client may send (the fetch standard's forbidden methods): never forwarded. */
const unforwardable = new Set(["CONNECT", "TRACE", "TRACK"]);

/**
 * The answer to a request whose upstream fetch failed with `err`; `abortReason` is why the
 * forwarder aborted it, if it did (an UpstreamTimeout, ShuttingDown, or the client's own abort).
 */
export function upstreamFailure(err: unknown, abortReason: unknown, clientGone: boolean, method: string): Response {
  if (clientGone) {
    // Nobody is listening; the status is for logs only (nginx's "client closed request").
    return new Response(null, { status: 499 });
  }
  // Refused by the upstream client before anything was sent: the client's request, not the upstream, is at fault.
  if (unforwardable.has(method.toUpperCase()))
    return jsonRpcError(405, JsonRpcCode.serverError, `Method Not Allowed: ${method} is not forwarded`, {
      headers: { allow: "GET, POST, DELETE" },
    });
  if (abortReason instanceof UpstreamTimeout) {
    return jsonRpcError(504, JsonRpcCode.internalError, abortReason.message);
  }
  if (abortReason instanceof ShuttingDown) {
    return jsonRpcError(503, JsonRpcCode.internalError, abortReason.message, { headers: { "retry-after": "1" } });
  }
  if (
    err instanceof UpstreamError &&
    (err.code === "UPSTREAM_BAD_RESPONSE" || err.code === "UPSTREAM_HEAD_TOO_LARGE")
  ) {
    return jsonRpcError(
      502,
      JsonRpcCode.internalError,
      `the upstream MCP server sent an invalid response (${err.message})`,
    );
  }
  if (err instanceof UpstreamError && err.code === "UPSTREAM_BODY_INCOMPLETE") return brokenBody();
  const code = (err as { code?: string }).code;
  const detail = code ?? (err instanceof Error ? err.message : "request failed");
  return jsonRpcError(502, JsonRpcCode.internalError, `upstream MCP server unreachable (${detail})`);
}
