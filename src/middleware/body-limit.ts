/**
 * Refuses request bodies over a limit with 413, before they reach the upstream.
 * A declared Content-Length is checked up front; a chunked body is counted as it
 * streams through, and the request is answered 413 once it crosses the limit.
 */
import { cappedStream } from "../bounded-body.ts";
import type { Handler, Middleware, RequestContext } from "../proxy/handler.ts";
import { JsonRpcCode, jsonRpcError } from "../proxy/jsonrpc.ts";

export const defaultMaxBodyBytes = 8 * 1024 * 1024;

export function bodyLimit(maxBytes: number = defaultMaxBodyBytes): Middleware {
  const tooLarge = () =>
    jsonRpcError(413, JsonRpcCode.invalidRequest, `Request body larger than ${maxBytes} bytes`, {
      headers: { connection: "close" },
    });

  return (next) => (req, ctx) => {
    // The declared length first: reading `req.body` turns the body into a stream, which then
    // costs every request downstream (the forwarder reads a small body whole, without one).
    // Not an async function: most requests pass on as they are, without a promise of this layer's.
    const declared = req.headers.get("content-length");
    if (declared !== null) return Number(declared) > maxBytes ? tooLarge() : next(req, ctx);
    if (req.body === null) return next(req, ctx);
    return withCountedBody(next, req, req.body, ctx);
  };

  async function withCountedBody(
    next: Handler,
    req: Request,
    body: ReadableStream<Uint8Array>,
    ctx: RequestContext,
  ): Promise<Response> {
    let exceeded = false;
    const counted = body.pipeThrough(
      cappedStream(maxBytes, undefined, () => {
        exceeded = true;
        return new Error("request body too large");
      }),
    );
    try {
      const response = await next(new Request(req, { body: counted, duplex: "half" }), ctx);
      return exceeded ? tooLarge() : response;
    } catch (err) {
      if (exceeded) return tooLarge();
      throw err;
    }
  }
}
