/**
 * The streamable-HTTP front end of the stdio bridge (MCP 2025-03-26 and later):
 * POST/GET/DELETE on one endpoint, Mcp-Session-Id issued on initialize.
 */
import { createEventStream, eventStreamResponse } from "../event-stream.ts";
import { pathOf, type Handler } from "../handler.ts";
import { JsonRpcCode, jsonRpcError } from "../jsonrpc.ts";
import type { LiveStreams } from "../live-streams.ts";
import type { StdioBridge } from "./bridge.ts";
import { allowsBatches, allowsStateless, isSupportedProtocolVersion, kindOf, type JsonRpcMessage } from "./messages.ts";
import { PostSink } from "./post-sink.ts";
import type { ClientSession } from "./session.ts";
import { streamSink } from "./sink.ts";

export interface StreamableHttpOptions {
  readonly bridge: StdioBridge;
  readonly path?: string;
  readonly live?: LiveStreams;
}

export function streamableHttpFrontEnd(options: StreamableHttpOptions): Handler {
  const { bridge, live } = options;
  const endpoint = options.path ?? "/mcp";

  const sessionFor = (req: Request): ClientSession | Response => {
    const id = req.headers.get("mcp-session-id");
    if (id === null)
      return jsonRpcError(400, JsonRpcCode.serverError, "Bad Request: the Mcp-Session-Id header is required");
    const session = bridge.getSession(id);
    if (session === undefined)
      return jsonRpcError(404, JsonRpcCode.sessionNotFound, "Session not found: start a new session with initialize");
    const version = req.headers.get("mcp-protocol-version");
    if (version !== null && !isSupportedProtocolVersion(version)) {
      return jsonRpcError(400, JsonRpcCode.serverError, `Bad Request: unsupported MCP-Protocol-Version ${version}`);
    }
    return session;
  };

  const post = async (req: Request, keepOpen: () => void): Promise<Response> => {
    const accept = req.headers.get("accept") ?? "*/*";
    const acceptsJson = accept.includes("application/json") || accept.includes("*/*");
    const acceptsSse = accept.includes("text/event-stream") || accept.includes("*/*");
    // Plain JSON is cheaper, so it is the default; a client naming SSE first gets streams.
    const prefersSse =
      acceptsSse && (!acceptsJson || accept.indexOf("text/event-stream") < accept.indexOf("application/json"));
    if (!acceptsJson && !acceptsSse)
      return jsonRpcError(406, JsonRpcCode.serverError, "Not Acceptable: accept application/json or text/event-stream");

    let body: unknown;
    try {
      body = JSON.parse(await req.text());
    } catch {
      return jsonRpcError(400, JsonRpcCode.parseError, "Parse error: the body is not JSON");
    }
    const batch = Array.isArray(body);
    const messages = (batch ? body : [body]) as JsonRpcMessage[];
    if (messages.length === 0 || messages.some((m) => kindOf(m) === "invalid")) {
      return jsonRpcError(400, JsonRpcCode.invalidRequest, "Invalid Request: not a JSON-RPC 2.0 message");
    }

    let session: ClientSession;
    let ephemeral = false;
    const initialize = messages.find((m) => m.method === "initialize");
    if (initialize !== undefined) {
      if (batch) return jsonRpcError(400, JsonRpcCode.invalidRequest, "Invalid Request: initialize cannot be batched");
      if (bridge.isClosed) return jsonRpcError(503, JsonRpcCode.internalError, "the MCP server is not running");
      session = bridge.createSession();
    } else if (req.headers.get("mcp-session-id") === null && allowsStateless(req.headers.get("mcp-protocol-version"))) {
      // A stateless request (2026-07-28): a session that lives for this POST only.
      if (bridge.isClosed) return jsonRpcError(503, JsonRpcCode.internalError, "the MCP server is not running");
      session = bridge.createSession();
      session.initialized = true;
      session.protocolVersion = req.headers.get("mcp-protocol-version") as string;
      ephemeral = true;
    } else {
      const found = sessionFor(req);
      if (found instanceof Response) return found;
      session = found;
      if (batch && !allowsBatches(session.protocolVersion)) {
        return jsonRpcError(
          400,
          JsonRpcCode.invalidRequest,
          `Invalid Request: JSON-RPC batches are not allowed in protocol ${session.protocolVersion}`,
        );
      }
    }

    const requests = messages.filter((m) => kindOf(m) === "request").length;
    const headers: Record<string, string> = ephemeral ? {} : { "mcp-session-id": session.id };
    const sink = new PostSink({
      expectedResponses: requests,
      acceptsSse,
      prefersSse,
      batch,
      headers,
      ...(live ? { live } : {}),
      onStream: keepOpen,
    });
    for (const message of messages) {
      const handled = bridge.handle(session, message, requests > 0 ? sink : NO_SINK);
      if (handled instanceof Promise) await handled;
    }
    if (requests === 0) {
      if (ephemeral) bridge.endSession(session);
      return new Response(null, { status: 202, headers });
    }
    // A stateless POST's session ends once its last response has been delivered.
    if (ephemeral) void sink.finished.then(() => bridge.endSession(session));
    const response = await sink.response;
    if (initialize !== undefined && response.status === 200 && !session.initialized) bridge.endSession(session);
    return response;
  };

  const get = (req: Request, keepOpen: () => void): Response => {
    if (req.headers.get("mcp-session-id") === null && allowsStateless(req.headers.get("mcp-protocol-version"))) {
      return new Response(null, { status: 405, headers: { allow: "POST" } });
    }
    const accept = req.headers.get("accept") ?? "";
    if (!accept.includes("text/event-stream"))
      return jsonRpcError(406, JsonRpcCode.serverError, "Not Acceptable: GET needs Accept: text/event-stream");
    const found = sessionFor(req);
    if (found instanceof Response) return found;
    if (found.standalone?.canStream)
      return jsonRpcError(409, JsonRpcCode.serverError, "Conflict: this session already has a GET stream");
    const stream = createEventStream(live ? { live } : {});
    found.standalone = streamSink(stream);
    found.onEnd(() => stream.close());
    keepOpen();
    return eventStreamResponse(stream, { "mcp-session-id": found.id });
  };

  return async (req, ctx) => {
    if (pathOf(req.url) !== endpoint)
      return jsonRpcError(404, JsonRpcCode.serverError, `Not Found: the MCP endpoint is ${endpoint}`);
    switch (req.method) {
      case "POST":
        return post(req, ctx.keepOpen);
      case "GET":
        return get(req, ctx.keepOpen);
      case "DELETE": {
        if (req.headers.get("mcp-session-id") === null && allowsStateless(req.headers.get("mcp-protocol-version"))) {
          return new Response(null, { status: 405, headers: { allow: "POST" } });
        }
        const found = sessionFor(req);
        if (found instanceof Response) return found;
        bridge.endSession(found);
        return new Response(null, { status: 200 });
      }
      default:
        return new Response(null, { status: 405, headers: { allow: "GET, POST, DELETE" } });
    }
  };
}

/** Notifications and responses need no answer. */
const NO_SINK = { send: () => false, canStream: false };
