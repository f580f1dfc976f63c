/**
 * The gateway's HTTP endpoint (`/mcp`), for both eras of MCP clients:
 *  - 2025-era clients (initialize, `Mcp-Session-Id`) get a session of their own: an SDK
 *    streamable-HTTP server transport and a gateway server with its own upstream pool, so
 *    everything a workload sends back reaches exactly that session;
 *  - 2026-07-28 clients (stateless requests with the `_meta` envelope, `server/discover`,
 *    `subscriptions/listen`) are served by the SDK's `createMcpHandler`, one gateway server
 *    per request over a pool per caller (there is no session to tie anything to, but whatever a
 *    workload keeps per upstream session must never pass from one principal to another); their
 *    tools/call is checked first for `Mcp-Param-*` headers that disagree with it (param-headers.ts),
 *    and each request's params as sent go with it to its server (modern-caller.ts needs what the SDK
 *    lifts off them).
 * A request with a session id (and no MCP-Protocol-Version of 2026-07-28 or later, which is served
 * statelessly whatever session id it carries) is routed by a map lookup; a
 * session answers only the caller that opened it (another caller's request is 404, as for
 * a session that does not exist), and at most `maxSessions` are open at once (when full, the least
 * recently used idle one gives way: proxy/session-eviction.ts). A session's tools/call of a routed tool
 * is relayed past the SDK (pass-through.ts) once its id is claimed, and so is a 2026-07-28 caller's,
 * once its Mcp-Param headers are checked (modern-pass-through.ts).
 */
import { createMcpHandler, isLegacyRequest, type Server } from "@modelcontextprotocol/server";
import type { Handler } from "../proxy/handler.ts";
import { pathOf } from "../proxy/handler.ts";
import { streamOpened } from "../proxy/event-stream.ts";
import { JsonRpcCode, jsonRpcError, sessionLimitReached } from "../proxy/jsonrpc.ts";
import { callerOf } from "../middleware/caller.ts";
import type { GroupCatalog, ListKind } from "./catalog.ts";
import { createGatewayServer, type GatewayServerOptions } from "./gateway-server.ts";
import { batchRefusal, checkedBody } from "./endpoint-body.ts";
import type { RpcBody } from "../middleware/rpc-body.ts";
import { namesPerRequestRevision } from "../proxy/mcp-message.ts";
import { paramHeaderRefusal } from "./param-headers.ts";
import { evictionGraceMs, sessionToEvict } from "../proxy/session-eviction.ts";
import { modernPassThrough, plainModernCall } from "./modern-pass-through.ts";
import { passThrough } from "./pass-through.ts";
import { anyResult } from "./sdk.ts";
import { SessionTransport } from "./session-transport.ts";
import { UpstreamPool } from "./upstream-pool.ts";
import { markForeignSession } from "../proxy/session-refusal.ts";
import { isObject } from "../objects.ts";

export const GATEWAY_PATH = "/mcp";

interface Session {
  readonly transport: SessionTransport;
  readonly server: Server;
  readonly pool: UpstreamPool;
  /** The caller that opened it (middleware/caller.ts `callerOf`), "" without authentication. */
  readonly owner: string;
  lastSeen: number;
  /** Its GET streams open: a client listening for the session's notifications is using it. */
  streams: number;
}

export interface FrontEndOptions extends GatewayServerOptions {
  readonly catalog: GroupCatalog;
  /** A session without requests for this long is closed. */
  readonly sessionIdleMs: number;
  /** Sessions open at once (MCPMGR_MAX_SESSIONS); past it an idle one gives way, else a new one is answered 503. */
  readonly maxSessions?: number;
}

export interface GatewayFrontEnd {
  readonly handler: Handler;
  /** Tells every client that the merged lists changed. */
  listsChanged(kinds: ReadonlySet<ListKind>): void;
  /** A workload left the group: its upstream sessions are closed. */
  workloadLeft(workload: string): void;
  /** A workload joined the group (again): sessions that followed resources there follow them again. */
  workloadJoined(workload: string): void;
  readonly sessionCount: number;
  close(): Promise<void>;
}

export function gatewayFrontEnd(options: FrontEndOptions): GatewayFrontEnd {
  const sessions = new Map<string, Session>();
  const maxSessions = options.maxSessions ?? 1_000;
  // Stateless callers' pools, by caller ("" without authentication), least recently used first.
  const callerPools = new Map<string, { pool: UpstreamPool; lastSeen: number }>();
  const poolOf = (req: Request | undefined): UpstreamPool => {
    const caller = (req && callerOf(req)) ?? "";
    let entry = callerPools.get(caller);
    if (entry === undefined) {
      entry = { pool: new UpstreamPool(options.catalog, options.timeoutMs), lastSeen: 0 };
      // As many callers as sessions at most: the one unused longest gives up its connections.
      if (callerPools.size >= maxSessions) {
        const [oldest, held] = callerPools.entries().next().value as [string, { pool: UpstreamPool }];
        callerPools.delete(oldest);
        void held.pool.close();
      }
    } else callerPools.delete(caller);
    entry.lastSeen = Date.now();
    callerPools.set(caller, entry);
    return entry.pool;
  };
  // Each 2026-07-28 POST's params as its caller sent them (the SDK lifts the envelope and retry
  // material off them before the gateway's handler runs; a member reached as a 2026-07-28 server needs them).
  const sentParams = new WeakMap<Request, Record<string, unknown>>();
  const modern = createMcpHandler(
    (request) => {
      const pool = poolOf(request.requestInfo);
      const params = request.requestInfo && sentParams.get(request.requestInfo);
      return createGatewayServer(options, () => pool, request.requestInfo, { params });
    },
    { legacy: "reject" },
  );

  /**
   * A session's end, however it comes: closing its server first cancels its calls in flight at their
   * members (the SDK's and the relayed ones, session-transport.ts), then its member sessions are ended.
   */
  const endSessionOf = async (session: Session): Promise<void> => {
    await session.server.close().catch(() => {});
    await session.pool.close();
  };

  const openSession = (req: Request): Session => {
    const owner = callerOf(req) ?? "";
    let server: Server | undefined;
    const pool = new UpstreamPool(options.catalog, options.timeoutMs, {
      capabilities: () => server?.getClientCapabilities() ?? {},
      request: (request, related, signal) =>
        (server as Server).request({ method: request.method, params: request.params }, anyResult, {
          signal,
          timeout: options.timeoutMs,
          ...(related !== undefined ? { relatedRequestId: related } : {}),
        }),
      notify: (notification, related) =>
        void server
          ?.notification(
            { method: notification.method, ...(notification.params ? { params: notification.params } : {}) },
            related !== undefined ? { relatedRequestId: related } : undefined,
          )
          .catch(() => {}),
    });
    server = createGatewayServer(options, () => pool, req);
    const session: Session = {
      server,
      pool,
      owner,
      lastSeen: Date.now(),
      streams: 0,
      transport: new SessionTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, session);
        },
        // The client's DELETE is answered once the session's calls are cancelled and its member
        // sessions ended (or MEMBER_SESSION_END_MS passed).
        onsessionclosed: (id) => endSession(id),
      }),
    };
    return session;
  };

  const endSession = async (id: string): Promise<void> => {
    const session = sessions.get(id);
    if (session === undefined) return;
    sessions.delete(id);
    await endSessionOf(session);
  };

  /** A full table makes room by ending its least recently used idle session (proxy/session-eviction.ts). */
  const endIdleSession = (): boolean => {
    const graceMs = evictionGraceMs(options.sessionIdleMs);
    const id = sessionToEvict(
      sessions,
      (s) => s.lastSeen,
      // A request in flight, or a GET stream open (as at the stdio bridge): the session is in use.
      (s) => s.transport.busy || s.streams > 0,
      Date.now(),
      graceMs,
    );
    if (id !== undefined) void endSession(id);
    return id !== undefined;
  };

  /**
   * A session's GET stream, counted in `streams` until it ends (the client left, or the session ended).
   * It starts with a comment, as the stdio bridge's do: the SDK writes nothing until an event or its
   * keep-alive (15 s), and Bun.serve sends the head only with the first bytes, so the client would
   * wait that long to see its stream open.
   */
  const heldOpen = (session: Session, response: Response): Response => {
    session.streams++;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      session.streams--;
      session.lastSeen = Date.now();
    };
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(streamOpened);
      },
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (!done) return controller.enqueue(value);
          end();
          controller.close();
        } catch (err) {
          end();
          controller.error(err);
        }
      },
      cancel(reason) {
        end();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };

  const sweep = setInterval(
    () => {
      const cutoff = Date.now() - options.sessionIdleMs;
      // A session with a call in flight is not idle: its client waits on it (a long tool run).
      for (const [id, session] of sessions)
        if (session.lastSeen < cutoff && !session.transport.busy) void endSession(id);
      for (const [caller, entry] of callerPools)
        if (entry.lastSeen < cutoff) {
          callerPools.delete(caller);
          void entry.pool.close();
        }
    },
    Math.min(60_000, options.sessionIdleMs),
  );
  sweep.unref();

  /** A 400 (-32020) for a tools/call whose Mcp-Param headers disagree with the tool the client listed. */
  const paramHeadersRefused = (req: Request, body: RpcBody): Response | undefined => {
    const message = body.messages.length === 1 && !Array.isArray(body.value) ? body.messages[0] : undefined;
    if (message?.method !== "tools/call") return undefined;
    const tools = options.search ? options.search.tools() : options.catalog.view.tools;
    const refusal = paramHeaderRefusal(req.headers, message.params, tools);
    if (refusal === undefined) return undefined;
    const id = typeof message.id === "string" || typeof message.id === "number" ? message.id : null;
    return jsonRpcError(refusal.status, refusal.code, refusal.message, { id });
  };

  const handler: Handler = async (req, ctx) => {
    if (pathOf(req.url) !== GATEWAY_PATH)
      return jsonRpcError(404, JsonRpcCode.invalidRequest, `not found; the MCP endpoint is ${GATEWAY_PATH}`);
    const checked = await checkedBody(req);
    if (checked instanceof Response) return checked;
    const { body, parsedBody, request, withBody } = checked;
    // Responses may stream for as long as a tool runs; the server's idle timeout must not cut them.
    ctx.keepOpen();
    // A request naming 2026-07-28 (or later) is served statelessly whatever Mcp-Session-Id it carries, as
    // that revision says: a session must not spare it the revision's checks (nor answer it the 2025 way).
    const sessionId = namesPerRequestRevision(req.headers.get("mcp-protocol-version"))
      ? null
      : req.headers.get("mcp-session-id");
    if (sessionId !== null) {
      const session = sessions.get(sessionId);
      if (session === undefined) return jsonRpcError(404, JsonRpcCode.sessionNotFound, "Session not found");
      // Another caller's: the same answer, marked so that the session is not counted as ended.
      if (session.owner !== (callerOf(req) ?? ""))
        return markForeignSession(ctx, jsonRpcError(404, JsonRpcCode.sessionNotFound, "Session not found"));
      session.lastSeen = Date.now();
      const batchRefused = Array.isArray(parsedBody) && batchRefusal(req, parsedBody.length);
      if (batchRefused) return batchRefused;
      const claimed = body && withBody ? session.transport.claim(body.messages) : [];
      if (!Array.isArray(claimed)) {
        const { duplicate } = claimed;
        return jsonRpcError(
          400,
          JsonRpcCode.invalidRequest,
          `Invalid Request: request id ${JSON.stringify(duplicate)} is still in progress in this session`,
          { id: duplicate },
        );
      }
      // A tools/call of a routed tool goes past the SDK (pass-through.ts); undefined: the SDK answers it.
      const relayed =
        body && !Array.isArray(body.value) ? await passThrough(options, session, request, body) : undefined;
      if (relayed !== undefined) return relayed;
      const response = await session.transport.handleRequest(request, withBody);
      if (claimed.length > 0 && response.status !== 200) session.transport.release(claimed);
      if (req.method === "GET" && response.ok && response.body !== null) return heldOpen(session, response);
      return response;
    }
    if (req.method !== "POST") {
      return jsonRpcError(405, JsonRpcCode.serverError, "Method not allowed without a session", {
        headers: { allow: "POST" },
      });
    }
    // A 2026-07-28 tools/call in its plain form is one the SDK would classify as such: its Mcp-Param headers
    // are checked, and a routed tool's call goes past the SDK's per-request server (modern-pass-through.ts),
    // before the SDK's classification (which validates the envelope again); undefined: the SDK answers it.
    const plain = body && plainModernCall(req, body);
    if (plain) {
      const refusal = paramHeadersRefused(req, body);
      if (refusal) return refusal;
      const relayed = await modernPassThrough(options, poolOf(req), req, plain);
      if (relayed !== undefined) return relayed;
    }
    if (!(await isLegacyRequest(request, parsedBody))) {
      // A 2026-07-28 tools/call (it must say so in Mcp-Method, or the SDK refuses it) is checked for its
      // Mcp-Param headers first.
      const call = req.headers.get("mcp-method")?.trim() === "tools/call" ? body : undefined;
      const refusal = call && paramHeadersRefused(request, call);
      if (refusal) return refusal;
      const params = (parsedBody as { params?: unknown } | undefined)?.params;
      if (isObject(params)) sentParams.set(request, params);
      // Search mode's instructions are the caller's (Cedar's decisions): asked before the server is made.
      await options.search?.readyFor(request);
      return modern.fetch(request, withBody);
    }
    if (sessions.size >= maxSessions && !endIdleSession()) return sessionLimitReached();
    await options.search?.readyFor(request);
    const session = openSession(request);
    await session.server.connect(session.transport);
    const response = await session.transport.handleRequest(request, withBody);
    // Anything but a successful initialize leaves no session behind.
    if (session.transport.sessionId === undefined || !sessions.has(session.transport.sessionId)) {
      await Promise.allSettled([session.pool.close(), session.server.close()]);
    }
    return response;
  };

  return {
    handler,
    get sessionCount() {
      return sessions.size;
    },
    listsChanged(changed) {
      // In search mode tools/list is always find_tool and call_tool: a change of the group's tools is
      // a change of what find_tool finds, not of the list.
      const kinds = new Set(changed);
      if (options.search) kinds.delete("tools");
      for (const session of sessions.values()) {
        if (kinds.has("tools")) void session.server.sendToolListChanged().catch(() => {});
        if (kinds.has("prompts")) void session.server.sendPromptListChanged().catch(() => {});
        if (kinds.has("resources")) void session.server.sendResourceListChanged().catch(() => {});
      }
      if (kinds.has("tools")) modern.notify.toolsChanged();
      if (kinds.has("prompts")) modern.notify.promptsChanged();
      if (kinds.has("resources")) modern.notify.resourcesChanged();
    },
    workloadLeft(workload) {
      for (const { pool } of callerPools.values()) pool.forget(workload);
      for (const session of sessions.values()) session.pool.forget(workload);
    },
    workloadJoined(workload) {
      for (const session of sessions.values()) session.pool.rejoined(workload);
    },
    async close() {
      clearInterval(sweep);
      const open = [...sessions.values()];
      const pools = [...callerPools.values()];
      sessions.clear();
      callerPools.clear();
      await Promise.allSettled([modern.close(), ...pools.map(({ pool }) => pool.close()), ...open.map(endSessionOf)]);
    },
  };
}
