/**
 * One MCP client connection from the gateway to one workload's endpoint (SDK v2 `Client`).
 * The gateway prefers a 2025-era session with each workload: a session ties every request the
 * workload sends back (sampling, elicitation, roots, log messages) to the one gateway session
 * that owns the connection, which a stateless 2026-07-28 exchange cannot do for a stdio server
 * behind the bridge. A workload that refuses the `initialize` handshake (a server that speaks
 * only 2026-07-28) is then reached with `versionNegotiation: auto` (`server/discover`). Requests the workload
 * sends to its client (sampling, elicitation, roots) and its notifications are handed to the
 * owner of the connection, which knows which gateway session they belong to.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { Client, SSEClientTransport, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type {
  ClientCapabilities,
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  PriorDiscovery,
} from "@modelcontextprotocol/client";
import { type AnswerLimit, boundedFetch } from "../proxy/answer-limit.ts";
import type { UpstreamInit } from "../proxy/authenticated-fetch.ts";
import { version } from "../version.ts";
import { memberSend } from "./member-send.ts";
import type { Member } from "./membership.ts";

export interface UpstreamHandlers {
  readonly capabilities?: ClientCapabilities;
  /** A request from the workload to its client; undefined: answered "method not found". */
  readonly onRequest?: (request: JSONRPCRequest, signal: AbortSignal) => Promise<Record<string, unknown>>;
  readonly onNotification?: (notification: JSONRPCNotification) => void;
  /** The connection ended (the workload stopped, or close() was called). */
  readonly onClose?: () => void;
  /**
   * The connection can no longer bring what the workload sends its session: the workload answered 404
   * for the member session (`forgotten`: it restarted, or let the session expire), or the session's
   * event stream ended and could not be opened again (`stream`: the session may still answer requests).
   */
  readonly onLost?: (why: "forgotten" | "stream") => void;
  /**
   * The member session's event stream was opened again (the SDK reopens one that ended): what the
   * workload sent the session while it was down reached no one, as it keeps no events to replay unless
   * it says otherwise (a resumed stream replays; this is told all the same).
   */
  readonly onReopened?: () => void;
  /**
   * The bound on the workload's answers (MCPMGR_MAX_MESSAGE_BYTES): a larger JSON answer fails its
   * request, a larger SSE event is cut and its request answered with an error (proxy/answer-limit.ts).
   */
  readonly answerLimit: AnswerLimit;
}

export type Upstream = Client;

/**
 * What belongs to the gateway request being forwarded, for the exchange with the workload it causes:
 * the W3C trace context for the requests sent (the SDK client takes no per-request headers, so its
 * fetch reads them from here), and where the workload's log lines for that request go (a 2026-07-28
 * caller's, which has no session to send them on). The SDK client reads a request's response stream,
 * and hands on what it carries, in the async context the request was sent in, so a log line on it
 * finds this scope; one found outside any scope is not that request's and goes nowhere.
 */
interface RequestScope {
  readonly trace?: Headers;
  readonly onLog?: (notification: JSONRPCNotification) => void;
}
const requestScope = new AsyncLocalStorage<RequestScope>();
const TRACE_HEADERS = ["traceparent", "tracestate"] as const;

/**
 * Runs `send` (an upstream request) so that it carries `incoming`'s trace context (with telemetry the
 * gateway's span, which the telemetry middleware put there, else the client's own, as `run` passes it
 * upstream), and so that the workload's log lines on its response stream reach `onLog`.
 */
export function withRequestScope<T>(
  incoming: Headers | undefined,
  onLog: ((notification: JSONRPCNotification) => void) | undefined,
  send: () => Promise<T>,
): Promise<T> {
  const trace = incoming?.has("traceparent") ? incoming : undefined;
  if (trace === undefined && onLog === undefined) return send();
  return requestScope.run({ ...(trace ? { trace } : {}), ...(onLog ? { onLog } : {}) }, send);
}

/** Where a workload's log line goes when it arrives on a 2026-07-28 caller's request, else undefined. */
export function requestLogRelay(): ((notification: JSONRPCNotification) => void) | undefined {
  return requestScope.getStore()?.onLog;
}

/**
 * `preferModern`: for a 2026-07-28 caller's pool. Such a caller has no session for a workload's
 * requests to reach, but it can answer input rounds: a workload that also speaks 2026-07-28 (every
 * stdio workload does, through its bridge) is reached that way, so its input rounds, its log lines
 * for the request and the caller's capabilities travel with each request. A 2025-only workload is
 * reached with a session still (the SDK's `auto` mode falls back to `initialize`).
 */
export async function connectUpstream(
  member: Member,
  handlers: UpstreamHandlers,
  timeoutMs: number,
  prior?: PriorDiscovery,
  preferModern = false,
): Promise<Upstream> {
  if (prior?.kind === "modern") return connectWith("auto", member, handlers, timeoutMs, prior);
  if (preferModern) return connectWith("auto", member, handlers, timeoutMs);
  try {
    return await connectWith("legacy", member, handlers, timeoutMs, prior);
  } catch (err) {
    if (prior?.kind === "legacy") throw err;
    return connectWith("auto", member, handlers, timeoutMs);
  }
}

/**
 * Input rounds one call of a 2025-era session may take at a workload reached as a 2026-07-28 server
 * before the gateway gives up on it (a workload that never completes would otherwise keep the session
 * answering questions): as many as the stdio bridge allows its sessions.
 */
export const MAX_INPUT_ROUNDS = 16;

async function connectWith(
  mode: "legacy" | "auto",
  member: Member,
  handlers: UpstreamHandlers,
  timeoutMs: number,
  prior?: PriorDiscovery,
): Promise<Upstream> {
  const client = new Client(
    { name: "mcpmgr-gateway", version },
    {
      capabilities: handlers.capabilities ?? {},
      versionNegotiation: { mode },
      inputRequired: { maxRounds: MAX_INPUT_ROUNDS },
    },
  );
  const onRequest = handlers.onRequest;
  if (onRequest) {
    client.fallbackRequestHandler = (request, ctx) => onRequest(request, ctx.mcpReq.signal);
    // A workload reached as a 2026-07-28 server asks inside its answer (an input_required result): the
    // SDK fulfils those rounds only through handlers registered per method, for the capabilities
    // declared, and then retries the call. Each goes to the owner, as a 2025-era workload's own request does.
    const declared = handlers.capabilities ?? {};
    for (const method of ["sampling/createMessage", "elicitation/create", "roots/list"] as const) {
      const capability =
        method === "sampling/createMessage" ? "sampling" : method === "elicitation/create" ? "elicitation" : "roots";
      if (declared[capability] === undefined) continue;
      client.setRequestHandler(
        method,
        (request, ctx) =>
          onRequest({ jsonrpc: "2.0", id: ctx.mcpReq.id, ...request } as JSONRPCRequest, ctx.mcpReq.signal) as never,
      );
    }
  }
  const onNotification = handlers.onNotification;
  if (onNotification) {
    client.fallbackNotificationHandler = async (notification) => onNotification(notification as JSONRPCNotification);
  }
  client.onclose = () => handlers.onClose?.();
  // Failures surface on the request that hit them; but a session's event stream that the transport gave
  // up reopening (its GET met errors each time: the workload was restarting) hits no request: nothing
  // would bring the session's notifications any more.
  client.onerror = (err) => {
    if (streamGaveUp(err)) handlers.onLost?.("stream");
  };
  const url = new URL(member.url);
  const fetch = boundedFetch(memberFetch(member, handlers.onLost, handlers.onReopened), handlers.answerLimit);
  // A stdio workload exposed with --proxy-mode sse (deprecated) serves the 2024-11-05 transport.
  const transport = url.pathname.endsWith("/sse")
    ? new SSEClientTransport(url, { fetch })
    : new MemberTransport(url, {
        fetch,
        reconnectionOptions: MEMBER_RECONNECTION,
      });
  await client.connect(transport, { timeout: timeoutMs, ...(prior ? { prior } : {}) });
  return client;
}

/** How a member session's lost event stream is reopened: a workload that stops is noticed through the group's membership, not by retrying forever. */
export const MEMBER_RECONNECTION = {
  initialReconnectionDelay: 500,
  maxReconnectionDelay: 5_000,
  reconnectionDelayGrowFactor: 2,
  maxRetries: 2,
} as const;

/**
 * Whether `err`, from a transport's `onerror`, says it gave up reopening a stream (MEMBER_RECONNECTION's
 * retries all failed). SDK 2.4.0 says so only in this message, on a plain Error: no code, no class, no
 * callback (its `reconnectionScheduler` is not called for the give-up, and the standalone stream has no
 * end callback). test/unit/member-stream-give-up.test.ts drives the SDK's transport into it, so a
 * rewording (or a code of its own, to switch to) fails there rather than silently here.
 */
export function streamGaveUp(err: Error): boolean {
  return err.message.startsWith("Maximum reconnection attempts");
}

/**
 * The streamable-HTTP transport to a member, which knows the notifications it is still sending (a
 * cancellation of a call in flight), so that a session's end reaches the member after them.
 */
class MemberTransport extends StreamableHTTPClientTransport {
  readonly #sending = new Set<Promise<void>>();

  override send(message: JSONRPCMessage, options?: Parameters<StreamableHTTPClientTransport["send"]>[1]) {
    const sent = super.send(message, options);
    if ("id" in message) return sent;
    this.#sending.add(sent);
    const settled = () => void this.#sending.delete(sent);
    sent.then(settled, settled);
    return sent;
  }

  /** Once the notifications being sent are delivered (or failed). */
  async sent(): Promise<void> {
    await Promise.allSettled([...this.#sending]);
  }
}

/**
 * How long the end of a gateway session (and of the gateway's own catalog connections) waits for its
 * members to end theirs (HTTP DELETE): a member slow to answer must not hold the client's DELETE, nor
 * the gateway's shutdown.
 */
export const MEMBER_SESSION_END_MS = 2_000;

/**
 * Ends the member session behind `client`, within `boundMs`, and closes the client: the cancellations
 * still on their way are delivered first, then the session is ended with HTTP DELETE, as MCP asks of a
 * client that no longer needs it. A member that does not allow that (405) or fails is left to expire the
 * session itself; one slow to answer is not waited for past the bound (closing the client aborts the DELETE).
 */
export async function endUpstream(client: Upstream, boundMs: number): Promise<void> {
  const transport = client.transport;
  if (transport instanceof MemberTransport) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, boundMs);
    });
    const ending = (async () => {
      await transport.sent();
      await transport.terminateSession();
    })().catch(() => {});
    await Promise.race([ending, bound]);
    clearTimeout(timer);
  }
  await client.close();
}

/**
 * Requests to a member carry the trace context of the call they serve, and the gateway key. They go
 * through mcpmgr's own HTTP client (member-send.ts), not Bun's fetch: fetch runs at most 256 requests at
 * once per process (BUN_CONFIG_MAX_HTTP_REQUESTS), and every 2025-era gateway session holds one of them
 * for good when its member keeps the standalone GET stream open. That client opens a connection only to
 * a listener the member's supervisor holds, and follows no redirect (the key is for the member's own
 * endpoint; the SDK transport follows one itself only within the member's origin, keeping the method). A
 * 404 on a request of a member session tells `onLost` the member forgot the session, and so does the
 * session's first event stream failing to open (`stream`); an event stream of the session opened after
 * the first tells `onReopened` (one fetch per connection).
 */
function memberFetch(
  member: Member,
  onLost: ((why: "forgotten" | "stream") => void) | undefined,
  onReopened: (() => void) | undefined,
): (url: string | URL, init?: RequestInit) => Promise<Response> {
  const { credential } = member;
  const send = memberSend(member);
  let streamsOpened = 0;
  let streamsAsked = 0;
  return async (url, init) => {
    const trace = requestScope.getStore()?.trace;
    const headers = new Headers(init?.headers);
    for (const name of TRACE_HEADERS) {
      const value = trace?.get(name);
      if (value) headers.set(name, value);
    }
    if (credential !== undefined) headers.set("authorization", `Bearer ${credential}`);
    // The session's first GET: the SDK opens it once, and tries no more when it fails (only a stream that
    // was open and ended is reopened, and its give-up told), so the session would carry no update ever.
    const firstStream = init?.method === "GET" && headers.has("mcp-session-id") && streamsAsked++ === 0;
    let response: Response;
    try {
      response = await send(String(url), { ...(init as UpstreamInit), headers, redirect: "manual" });
    } catch (err) {
      if (firstStream) onLost?.("stream");
      throw err;
    }
    // 405: the member offers no stream (nothing to lose); 401/403 and 404 are told as they are.
    if (firstStream && !response.ok && ![401, 403, 404, 405].includes(response.status)) onLost?.("stream");
    // 404 to a request on a member session: the member forgot it (any request, the event stream's
    // reopening included, which no caller waits on). The session's own DELETE says nothing new.
    if (response.status === 404 && headers.has("mcp-session-id") && init?.method !== "DELETE") onLost?.("forgotten");
    // The first GET stream is the session's own; any later one reopens it (or resumes a call's stream).
    if (
      init?.method === "GET" &&
      response.ok &&
      headers.has("mcp-session-id") &&
      response.headers.get("content-type")?.startsWith("text/event-stream") &&
      streamsOpened++ > 0
    )
      onReopened?.();
    return response;
  };
}

/** The era a first connection found, so later connections to the same workload skip the probe. */
export function eraOf(client: Upstream): PriorDiscovery | undefined {
  if (client.getProtocolEra() === "legacy") return { kind: "legacy" };
  const discover = client.getDiscoverResult();
  return discover ? { kind: "modern", discover } : undefined;
}
