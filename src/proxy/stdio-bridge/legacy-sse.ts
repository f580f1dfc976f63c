/**
 * The deprecated HTTP+SSE front end (protocol 2024-11-05): GET /sse opens a session
 * and its one stream, whose first event names the URL to POST messages to; every
 * answer travels on the stream of the session that asked — never to anyone else.
 */
import { createEventStream, eventStreamResponse } from "../event-stream.ts";
import { pathAndQuery, pathOf, type Handler } from "../handler.ts";
import { JsonRpcCode, jsonRpcError, serverUnavailable, sessionLimitReached } from "../jsonrpc.ts";
import type { LiveStreams } from "../live-streams.ts";
import type { StdioBridge } from "./bridge.ts";
import { parseJsonText, refusedBody } from "./json-text.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import { kindOf } from "./messages.ts";
import { streamSink } from "./sink.ts";

export interface LegacySseOptions {
  readonly bridge: StdioBridge;
  readonly live?: LiveStreams;
  readonly ssePath?: string;
  readonly messagesPath?: string;
  /** Prepended to the advertised messages URL (--endpoint-prefix). */
  readonly endpointPrefix?: string;
  /**
   * Who the request acts as (middleware/caller.ts `callerOf`): a session is bound to the caller
   * that opened its stream, and a message another caller POSTs to it is refused as unknown.
   */
  readonly principalOf?: (req: Request) => string | undefined;
}

/** Requests of one legacy session the server may be working on at once. */
const maxInFlightPerSession = 256;

export function legacySseFrontEnd(options: LegacySseOptions): Handler {
  const { bridge, live } = options;
  const ssePath = options.ssePath ?? "/sse";
  const messagesPath = options.messagesPath ?? "/messages";
  const prefix = options.endpointPrefix ?? "";
  const principalOf = (req: Request) => options.principalOf?.(req) ?? "";

  // Graceful stop: whatever is still pending when its bound runs out gets a JSON-RPC error.
  live?.beforeClose((reason) => bridge.close(reason));

  const open = (req: Request, keepOpen: () => void): Response => {
    if (bridge.isClosed) return serverUnavailable("the MCP server is not running", 1);
    if (!bridge.roomForSession()) return sessionLimitReached();
    const session = bridge.createSession(principalOf(req));
    session.protocolVersion = "2024-11-05";
    session.pinned = true;
    const stream = createEventStream({ ...(live ? { live } : {}), onDropped: (bytes) => bridge.streamDropped(bytes) });
    session.standalone = streamSink(stream);
    // The stream is the session: when the client leaves, the session ends.
    stream.onClose(() => bridge.endSession(session));
    session.onEnd(() => stream.close());
    stream.send(`${prefix}${messagesPath}?sessionId=${session.id}`, "endpoint");
    keepOpen();
    return eventStreamResponse(stream);
  };

  const post = async (req: Request): Promise<Response> => {
    const query = pathAndQuery(req.url);
    const id = new URLSearchParams(query.slice(query.indexOf("?") + 1)).get("sessionId");
    if (id === null) return jsonRpcError(400, JsonRpcCode.serverError, "Bad Request: sessionId is required");
    // Another caller's session is "not found": the message never reaches it.
    const session = bridge.getSession(id, principalOf(req));
    if (session === undefined || session.standalone === undefined) {
      return jsonRpcError(404, JsonRpcCode.sessionNotFound, "Session not found: open a new SSE stream");
    }
    const parsed = parseJsonText(await req.text());
    if ("error" in parsed) return refusedBody(parsed.error);
    const message = parsed.value as JsonRpcMessage;
    const kind = kindOf(message);
    if (kind === "invalid")
      return jsonRpcError(400, JsonRpcCode.invalidRequest, "Invalid Request: not a JSON-RPC 2.0 message");
    // A POST here is answered at once, whatever the server does: without a cap one client could
    // pile up requests (and their answers on a stream it need not read) without limit.
    if (kind === "request" && session.inFlight >= maxInFlightPerSession)
      return jsonRpcError(
        429,
        JsonRpcCode.serverError,
        `Too Many Requests: ${maxInFlightPerSession} requests of this session are already in progress`,
        { id: message.id ?? null, headers: { "retry-after": "1" } },
      );
    void bridge.handle(session, message, session.standalone);
    return new Response("Accepted", { status: 202 });
  };

  return (req, ctx) => {
    const path = pathOf(req.url);
    if (req.method === "GET" && path === ssePath) return open(req, ctx.keepOpen);
    if (req.method === "POST" && path === messagesPath) return post(req);
    return jsonRpcError(404, JsonRpcCode.serverError, `Not Found: open ${ssePath} first`);
  };
}
