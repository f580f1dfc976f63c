/**
 * The streamable-HTTP front end of the stdio bridge. Two kinds of client share the one
 * endpoint:
 *   - sessions (2025-03-26 … 2025-11-25): POST/GET/DELETE, Mcp-Session-Id issued on initialize;
 *   - 2026-07-28 requests: each POST stands alone (no session, no initialize), its context in
 *     `_meta`, its method and target mirrored in headers, which are checked here because the
 *     stdio server never sees them (modern.ts). GET and DELETE answer 405 to such clients.
 */
import { createEventStream, eventStreamResponse } from "../event-stream.ts";
import { pathOf, type Handler, type RequestContext } from "../handler.ts";
import { JsonRpcCode, jsonRpcError, serverUnavailable, sessionLimitReached } from "../jsonrpc.ts";
import { markForeignSession } from "../session-refusal.ts";
import type { LiveStreams } from "../live-streams.ts";
import type { StdioBridge } from "./bridge.ts";
import { parseJsonText, refusedBody } from "./json-text.ts";
import { type JsonRpcMessage, namesPerRequestRevision } from "../mcp-message.ts";
import { allowsBatches, isSupportedProtocolVersion, kindOf } from "./messages.ts";
import { checkModernRequest, type EdgeRefusal, metaKey, type ModernEnvelope, statusOfModernError } from "./modern.ts";
import { PostSink } from "./post-sink.ts";
import { type ClientSession, statelessSession } from "./session.ts";
import { streamSink } from "./sink.ts";

export interface StreamableHttpOptions {
  readonly bridge: StdioBridge;
  readonly path?: string;
  readonly live?: LiveStreams;
  /**
   * Who the request acts as (middleware/caller.ts `callerOf`): a session is bound to the caller
   * that opened it, and input-round state to the caller it was issued to.
   */
  readonly principalOf?: (req: Request) => string | undefined;
}

/** Versions that need a session; anything else without one is a 2026-07-28 request. */
const sessionVersion = (version: string | null) =>
  version !== null && isSupportedProtocolVersion(version) && version < "2026";

export function streamableHttpFrontEnd(options: StreamableHttpOptions): Handler {
  const { bridge, live } = options;
  const endpoint = options.path ?? "/mcp";
  const principalOf = (req: Request) => options.principalOf?.(req) ?? "";
  // Graceful stop: whatever is still pending when its bound runs out gets a JSON-RPC error.
  live?.beforeClose((reason) => bridge.close(reason));

  const sessionFor = (req: Request, ctx: RequestContext): ClientSession | Response => {
    const id = req.headers.get("mcp-session-id");
    if (id === null)
      return jsonRpcError(400, JsonRpcCode.serverError, "Bad Request: the Mcp-Session-Id header is required");
    // Another caller's session is "not found" (POST, GET and DELETE alike): nothing reaches it.
    const session = bridge.getSession(id, principalOf(req));
    if (session === undefined) {
      const refusal = jsonRpcError(
        404,
        JsonRpcCode.sessionNotFound,
        "Session not found: start a new session with initialize",
      );
      // Marked when the session goes on (another caller's), so that it is not counted as ended.
      return bridge.hasSession(id) ? markForeignSession(ctx, refusal) : refusal;
    }
    const version = req.headers.get("mcp-protocol-version");
    if (version !== null && !isSupportedProtocolVersion(version)) {
      return jsonRpcError(400, JsonRpcCode.serverError, `Bad Request: unsupported MCP-Protocol-Version ${version}`);
    }
    return session;
  };

  /**
   * A 2026-07-28 POST: one whose MCP-Protocol-Version names that revision or a later one (with
   * or without an Mcp-Session-Id: a session must not spare it the revision's header checks), or
   * one without a session that is not an initialize, unless it names an older version. A
   * request without a session whose `_meta` names another version than its (older) header is a
   * 2026-07-28 request too, answered as that revision says (400, -32020 HeaderMismatch), as the
   * gateway answers it, rather than told it lacks a session.
   */
  const isModern = (req: Request, messages: readonly JsonRpcMessage[]): boolean => {
    const header = req.headers.get("mcp-protocol-version");
    if (namesPerRequestRevision(header)) return true;
    if (req.headers.get("mcp-session-id") !== null) return false;
    if (sessionVersion(header))
      return messages.some((m) => {
        const version = m.params?._meta?.[metaKey.protocolVersion];
        return m.method !== "initialize" && typeof version === "string" && version !== header;
      });
    return header !== null || messages.some((m) => m.params?._meta?.[metaKey.protocolVersion] !== undefined);
  };

  const modernPost = (
    req: Request,
    message: JsonRpcMessage,
    acceptsSse: boolean,
    keepOpen: () => void,
  ): Response | Promise<Response> => {
    const kind = kindOf(message);
    if (kind !== "request") {
      // 2026-07-28 defines no client notifications over HTTP; accepted and dropped.
      return new Response(null, { status: kind === "notification" ? 202 : 400 });
    }
    const envelope = checkModernRequest(req.headers, message, bridge.modernVersions);
    if ("status" in envelope) return refuse(message, envelope);
    if (bridge.isClosed) return serverUnavailable("the MCP server is not running", 1);
    // Mirrored tool arguments (Mcp-Param-*) are checked against the tool's declarations first.
    if (message.method === "tools/call") {
      const refusal = bridge.checkParamHeaders(req.headers, message);
      if (refusal instanceof Promise)
        return refusal.then((late) =>
          late ? refuse(message, late) : serveModern(req, message, envelope, acceptsSse, keepOpen),
        );
      if (refusal) return refuse(message, refusal);
    }
    return serveModern(req, message, envelope, acceptsSse, keepOpen);
  };

  const refuse = (message: JsonRpcMessage, refusal: EdgeRefusal): Response =>
    jsonRpcError(refusal.status, refusal.code, refusal.message, {
      id: message.id ?? null,
      ...(refusal.data !== undefined ? { data: refusal.data } : {}),
    });

  const serveModern = (
    req: Request,
    message: JsonRpcMessage,
    envelope: ModernEnvelope,
    acceptsSse: boolean,
    keepOpen: () => void,
  ): Response | Promise<Response> => {
    const session = statelessSession(
      envelope.protocolVersion,
      envelope.capabilities,
      envelope.logLevel,
      principalOf(req),
    );
    const listen = message.method === "subscriptions/listen";
    const sink = new PostSink({
      expectedResponses: 1,
      acceptsSse,
      prefersSse: listen,
      listen,
      batch: false,
      headers: {},
      ...(live ? { live } : {}),
      onStream: keepOpen,
      requestIds: [message.id ?? null],
      statusOf: (answer) => (answer.error ? statusOfModernError(answer.error.code) : 200),
      onAbandon: () => bridge.abandon(sink),
      onDropped: (bytes) => bridge.streamDropped(bytes),
    });
    // The client going away before its answer is its cancellation.
    req.signal?.addEventListener("abort", () => {
      bridge.abandon(sink);
      sink.abort();
    });
    if (listen && bridge.server?.era !== "modern") {
      if (!acceptsSse)
        return jsonRpcError(
          406,
          JsonRpcCode.serverError,
          "Not Acceptable: subscriptions/listen answers with a stream",
          {
            id: message.id ?? null,
          },
        );
      sink.streamNow();
      bridge.listen(message, listenSink(sink));
    } else {
      if (listen) sink.streamNow();
      bridge.handle(session, message, sink);
    }
    void sink.finished.then(() => bridge.endSession(session));
    return sink.response;
  };

  const post = async (req: Request, ctx: RequestContext): Promise<Response> => {
    const keepOpen = ctx.keepOpen;
    const accept = req.headers.get("accept") ?? "*/*";
    const acceptsJson = accept.includes("application/json") || accept.includes("*/*");
    const acceptsSse = accept.includes("text/event-stream") || accept.includes("*/*");
    // Plain JSON is cheaper, so it is the default; a client naming SSE first gets streams.
    const prefersSse =
      acceptsSse && (!acceptsJson || accept.indexOf("text/event-stream") < accept.indexOf("application/json"));
    if (!acceptsJson && !acceptsSse)
      return jsonRpcError(406, JsonRpcCode.serverError, "Not Acceptable: accept application/json or text/event-stream");

    const parsed = parseJsonText(await req.text());
    if ("error" in parsed) return refusedBody(parsed.error);
    const body = parsed.value;
    const batch = Array.isArray(body);
    const messages = (batch ? body : [body]) as JsonRpcMessage[];
    if (messages.length === 0 || messages.some((m) => kindOf(m) === "invalid")) {
      return jsonRpcError(400, JsonRpcCode.invalidRequest, "Invalid Request: not a JSON-RPC 2.0 message");
    }

    let session: ClientSession;
    // A 2026-07-28 client gets that revision's answers, for initialize too (404: no such method).
    if (isModern(req, messages)) {
      if (batch) return jsonRpcError(400, JsonRpcCode.invalidRequest, "Invalid Request: send one message per POST");
      return modernPost(req, messages[0] as JsonRpcMessage, acceptsSse, keepOpen);
    }
    const initialize = messages.find((m) => m.method === "initialize");
    if (initialize !== undefined) {
      if (batch) return jsonRpcError(400, JsonRpcCode.invalidRequest, "Invalid Request: initialize cannot be batched");
      if (bridge.isClosed) return serverUnavailable("the MCP server is not running", 1);
      if (!bridge.roomForSession()) return sessionLimitReached();
      session = bridge.createSession(principalOf(req));
    } else {
      const found = sessionFor(req, ctx);
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

    const requestIds = messages.filter((m) => kindOf(m) === "request").map((m) => m.id ?? null);
    const headers: Record<string, string> = { "mcp-session-id": session.id };
    const sink = new PostSink({
      expectedResponses: requestIds.length,
      acceptsSse,
      prefersSse,
      batch,
      headers,
      ...(live ? { live } : {}),
      onStream: keepOpen,
      requestIds,
      onDropped: (bytes) => bridge.streamDropped(bytes),
    });
    for (const message of messages) {
      const handled = bridge.handle(session, message, requestIds.length > 0 ? sink : NO_SINK);
      if (handled instanceof Promise) await handled;
    }
    if (requestIds.length === 0) return new Response(null, { status: 202, headers });
    const response = await sink.response;
    if (initialize !== undefined && response.status === 200 && !session.initialized) bridge.endSession(session);
    return response;
  };

  /** GET and DELETE from a 2026-07-28 client (the revision has neither): 405. */
  const refuseStateless = (req: Request): Response | undefined => {
    const header = req.headers.get("mcp-protocol-version");
    const stateless =
      namesPerRequestRevision(header) ||
      (req.headers.get("mcp-session-id") === null && header !== null && !sessionVersion(header));
    return stateless ? new Response(null, { status: 405, headers: { allow: "POST" } }) : undefined;
  };

  const get = (req: Request, ctx: RequestContext): Response => {
    const stateless = refuseStateless(req);
    if (stateless) return stateless;
    const accept = req.headers.get("accept") ?? "";
    if (!accept.includes("text/event-stream"))
      return jsonRpcError(406, JsonRpcCode.serverError, "Not Acceptable: GET needs Accept: text/event-stream");
    const found = sessionFor(req, ctx);
    if (found instanceof Response) return found;
    if (found.standalone?.canStream)
      return jsonRpcError(409, JsonRpcCode.serverError, "Conflict: this session already has a GET stream");
    const stream = createEventStream({ ...(live ? { live } : {}), onDropped: (bytes) => bridge.streamDropped(bytes) });
    found.standalone = streamSink(stream);
    found.onEnd(() => stream.close());
    ctx.keepOpen();
    return eventStreamResponse(stream, { "mcp-session-id": found.id });
  };

  return async (req, ctx) => {
    if (pathOf(req.url) !== endpoint)
      return jsonRpcError(404, JsonRpcCode.serverError, `Not Found: the MCP endpoint is ${endpoint}`);
    switch (req.method) {
      case "POST":
        return post(req, ctx);
      case "GET":
        return get(req, ctx);
      case "DELETE": {
        const stateless = refuseStateless(req);
        if (stateless) return stateless;
        const found = sessionFor(req, ctx);
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

/** A listen stream's sink: it ends when its request is answered, and tells when the client left. */
function listenSink(sink: PostSink) {
  const closers: (() => void)[] = [];
  void sink.finished.then(() => {
    for (const close of closers.splice(0)) close();
  });
  return {
    send: (message: JsonRpcMessage) => sink.send(message),
    get canStream() {
      return sink.canStream;
    },
    onClose(listener: () => void) {
      closers.push(listener);
    },
  };
}
