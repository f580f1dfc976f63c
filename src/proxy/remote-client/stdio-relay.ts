/**
 * `proxy stdio`'s relay: a remote MCP endpoint offered to a stdio client. Messages are
 * relayed as they are, in both directions; the client's own messages choose the protocol
 * era towards the remote:
 *   - a request declaring a 2026-07-28 (or later) protocol version in its `_meta` is sent
 *     statelessly, one POST each with the headers that revision requires
 *     (stateless-requests.ts); the client does its own version negotiation (`server/discover`,
 *     UnsupportedProtocolVersion) and falls back to `initialize` with an older remote;
 *   - everything else (`initialize` and what follows it) goes through the SDK's streamable
 *     HTTP client transport: sessions, SSE answers, the server→client GET stream;
 *   - unless the remote refuses that initialize and answers `server/discover` as a server that
 *     speaks only 2026-07-28: then the client's session is served by translating between the
 *     eras (legacy-client.ts, the stdio bridge's translation), from that initialize on.
 * Every HTTP request goes through `fetch` (mcpmgr's credentials, when configured) and never
 * follows a redirect (no-redirects.ts). A workload's endpoint that went away (stopped, or moved to
 * another port) is looked up again (`follow`) where a forgotten session is renewed. The relay
 * ends when the client's input ends (after what was asked is answered, bounded) or the
 * connection fails; stdout carries only the protocol.
 */
import type { Readable, Writable } from "node:stream";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { errorMessage, McpmgrError } from "../../errors.ts";
import { AnswerTooLarge } from "../answer-limit.ts";
import type { JsonRpcMessage, JsonRpcRequest } from "../mcp-message.ts";
import type { LegacyClientTranslation } from "./legacy-client.ts";
import { FollowedEndpoint, type RelayEndpoint } from "./relay-endpoint.ts";
import { answerLost, lostAnswer, refusedCredentials, undelivered } from "./relay-failures.ts";
import { modernVersionOf } from "./request-headers.ts";
import { RemoteSession } from "./session-renewal.ts";
import { changingLists, sessionSetup } from "./session-setup.ts";
import { firstLine, watchClientEnds, writtenOut } from "./stdio-ends.ts";
import { StatelessRequests } from "./stateless-requests.ts";

export type { RelayEndpoint } from "./relay-endpoint.ts";

export interface StdioRelayOptions extends RelayEndpoint {
  /**
   * For a workload (`proxy stdio NAME`): looks it up again, with every check of the first lookup, when
   * its endpoint went away or forgot the session; throws (WORKLOAD_NOT_RUNNING, with the way out) while
   * it is stopped. Without it the relay keeps its one URL.
   */
  readonly follow?: () => Promise<RelayEndpoint>;
  readonly stdin: Readable;
  readonly stdout: Writable;
  readonly log: { info(text: string): void; warn(text: string): void; error(text: string): void };
  /** The largest answer held from the remote (MCPMGR_MAX_MESSAGE_BYTES; default 64 MiB): answer-limit.ts. */
  readonly maxMessageBytes?: number;
}

export interface StdioRelay {
  /** The exit code once the relay is over: 0 at the end of input, 1 when it failed. */
  readonly finished: Promise<number>;
}

/** How long answers to requests still in flight are waited for once the input ends. */
const DRAIN_MS = 30_000;

export async function startStdioRelay(options: StdioRelayOptions): Promise<StdioRelay> {
  const { log } = options;
  const endpoint = new FollowedEndpoint(
    { target: options.target, fetch: options.fetch },
    options.follow,
    log,
    options.maxMessageBytes,
  );
  const local = new StdioServerTransport(options.stdin, options.stdout);
  const deliver = (message: JSONRPCMessage) => void local.send(message);
  const stateless = new StatelessRequests({
    get url() {
      return endpoint.target;
    },
    fetch: endpoint.fetch,
    deliver: (message) => deliver(message as JSONRPCMessage),
    warn: (text) => log.warn(`remote: ${text}`),
    // A workload gone from where a request went is looked up again; the request goes again only when it was
    // refused before it was sent: one that reached the workload may have been carried out (a tool call twice).
    followAfter: async (err) => {
      if (!endpoint.gone(err)) return false;
      const unreachable = await endpoint.lookUpAgain();
      if (answerLost(err)) return false;
      if (unreachable !== undefined) throw unreachable;
      return true;
    },
  });
  let done!: (code: number) => void;
  const finished = new Promise<number>((resolve) => {
    done = resolve;
  });
  let closing = false;
  /** Set when an answer could not be written to the client (its stdout failed): the relay failed. */
  let outputFailure: string | undefined;
  const finish = async (why?: string) => {
    if (closing) return;
    closing = true;
    if (why) log.error(why);
    stateless.abortAll();
    translation?.close();
    // Ends the remote session (DELETE) when there is one.
    const { remote } = session;
    if (remote.sessionId !== undefined) await remote.terminateSession().catch(() => {});
    await remote.close().catch(() => {});
    await local.close().catch(() => {});
    await writtenOut(options.stdout);
    if (!why && outputFailure) log.error(outputFailure);
    done(why || outputFailure ? 1 : 0);
  };

  /** The client's initialize requests the remote has not answered yet, by id. */
  const pendingInitialize = new Map<string | number, JSONRPCMessage>();
  /** Requests sent and not answered yet: stdin may end before their answers arrive. */
  const inFlight = new Set<string | number>();
  // One message at a time, in order: a cancellation must not overtake its request.
  let sending: Promise<void> = Promise.resolve();
  /** Set once a 2025-era client is served in front of a remote that speaks only 2026-07-28. */
  let translation: LegacyClientTranslation | undefined;
  /** The log level and subscriptions the client set up: set up again in a renewed session. */
  const setup = sessionSetup();
  const session: RemoteSession = new RemoteSession({
    endpoint,
    wire: (remote) => wireRemote(remote),
    setup,
    deliver,
    inFlight,
    inTurn: (task) => {
      sending = sending.then(task);
    },
    closing: () => closing,
    log,
  });
  /**
   * The remote refused the client's initialize. A remote that speaks only 2026-07-28 does
   * that by design: the client is then served by translating, from this initialize on.
   * Anything else gets the refusal. Runs in the sending order, so nothing overtakes it.
   */
  const initializeRefused = async (initialize: JSONRPCMessage, refusal: JSONRPCMessage): Promise<void> => {
    const { translateForLegacyClient } = await import("./legacy-client.ts");
    const attempt = await translateForLegacyClient({
      url: endpoint.target,
      fetch: endpoint.fetch,
      deliver: (message) => deliver(message as JSONRPCMessage),
      warn: (text) => log.warn(`remote: ${text}`),
      initialize: initialize as JsonRpcMessage,
    });
    if ("refused" in attempt) {
      log.warn(`remote: ${attempt.refused}`);
      void local.send(refusal);
      return;
    }
    if (closing) return attempt.close();
    translation = attempt;
    log.info("the remote speaks only MCP 2026-07-28: mcpmgr translates for this client's 2025-era session");
    attempt.handle(initialize as JsonRpcMessage);
  };

  local.onmessage = (message: JSONRPCMessage) => {
    session.clientSpoke();
    const isRequest = "method" in message && "id" in message && message.id !== undefined;
    const version = isRequest ? modernVersionOf(message) : undefined;
    if (version !== undefined) {
      // Stateless: nothing to keep in order with other messages, each request stands alone.
      void stateless.send(message as JsonRpcRequest, version);
      return;
    }
    // On stdio a 2026-07-28 client cancels with a notification; over HTTP closing the stream says it.
    if (
      "method" in message &&
      message.method === "notifications/cancelled" &&
      stateless.cancel(message.params?.requestId)
    )
      return;
    sending = sending.then(async () => {
      if (translation) return translation.handle(message as JsonRpcMessage);
      const id = isRequest ? (message.id as string | number) : undefined;
      if (id !== undefined && "method" in message && message.method === "initialize")
        pendingInitialize.set(id, message);
      if (id !== undefined) inFlight.add(id);
      const isInitialized = "method" in message && message.method === "notifications/initialized";
      if (session.opened !== undefined && isInitialized) session.opened.initialized = true;
      try {
        // A session lost earlier, and not opened again then: tried again before this message goes.
        const notRenewed = session.lost && !pendingInitialize.has(id ?? "") ? await session.renew(id) : undefined;
        if (notRenewed !== undefined) throw new Error(notRenewed);
        try {
          await session.remote.send(message);
        } catch (err) {
          // Sent, and perhaps carried out, when the workload ended: never sent again (answered as lost below);
          // the workload is followed now (the other requests of its session answered as lost), for what comes next.
          if (answerLost(err)) {
            if (session.opened !== undefined) await session.renew(id);
            throw err;
          }
          if (session.opened === undefined && id !== undefined && pendingInitialize.has(id) && endpoint.gone(err)) {
            // A workload gone from where the relay was started (moved to another port, or stopped) before the
            // client's first initialize: followed with the same checks, and the initialize, refused before it was
            // sent, goes where it serves now.
            const unreachable = await endpoint.lookUpAgain();
            if (unreachable !== undefined) throw unreachable;
            await session.reconnect();
            await session.remote.send(message);
          } else {
            if (!session.gone(err)) throw err;
            const why = await session.renew(id);
            if (why !== undefined) throw new Error(why);
            // The renewal sent the client's initialized itself: twice, the transport would open a second
            // event stream, which the remote refuses (409).
            if (!isInitialized) await session.remote.send(message);
          }
        }
        setup.noteSent(message);
      } catch (err) {
        if (id === undefined) return log.warn(`could not deliver a message to the remote: ${errorMessage(err)}`);
        // A request that could not be delivered gets an error answer, not silence.
        inFlight.delete(id);
        const refusal = answerLost(err) ? lostAnswer(id, err) : undelivered(id, err);
        const initialize = pendingInitialize.get(id);
        pendingInitialize.delete(id);
        // A workload that is not served: no era to translate for.
        const gone = endpoint.gone(err);
        if (initialize !== undefined && !refusedCredentials(err) && !gone) await initializeRefused(initialize, refusal);
        else deliver(refusal);
      }
    });
  };
  const onRemoteMessage = (message: JSONRPCMessage) => {
    if (session.ownAnswer(message)) return;
    const id = !("method" in message) && "id" in message ? message.id : undefined;
    if (id !== undefined) inFlight.delete(id);
    const initialize = id !== undefined ? pendingInitialize.get(id) : undefined;
    if (id !== undefined && initialize !== undefined) {
      pendingInitialize.delete(id);
      if ("error" in message) {
        sending = sending.then(() => initializeRefused(initialize, message));
        return;
      }
      // The negotiated version goes on every later HTTP request (MCP-Protocol-Version).
      const version =
        "result" in message ? (message.result as { protocolVersion?: unknown }).protocolVersion : undefined;
      if (typeof version === "string") session.remote.setProtocolVersion(version);
      if ("result" in message) session.open(initialize, changingLists(message));
    }
    deliver(message);
  };
  function wireRemote(remote: StreamableHTTPClientTransport) {
    // The first transport is wired before the handlers below are defined: each is looked up when it is called.
    remote.onmessage = (message) => onRemoteMessage(message);
    remote.onerror = (err) => {
      // A refused initialize is dealt with where it was sent (answered, or translated for); an answer over
      // the bound was logged when it was cut; a forgotten session is renewed (session-renewal.ts), and says so.
      if (session.gone(err) || session.streamRefused(err)) return session.renewInTurn();
      if (pendingInitialize.size > 0 || err instanceof AnswerTooLarge) return;
      log.warn(`remote: ${err.message}`);
    };
  }
  // End of input: let what was asked be answered (bounded), then end the remote session.
  const drainThenFinish = async (why?: string) => {
    await sending;
    const deadline = Date.now() + DRAIN_MS;
    const pending = () => inFlight.size + stateless.pending + (translation?.pending ?? 0);
    while (pending() > 0 && Date.now() < deadline) await Bun.sleep(20);
    await finish(why);
  };
  watchClientEnds({
    ...options,
    local,
    inputEnded: (why) => void drainThenFinish(why),
    outputFailed: (why) => {
      if (why !== undefined) outputFailure ??= why;
      void finish();
    },
  });
  await session.remote.start();
  try {
    await local.start();
  } catch (err) {
    // Bun fails at once on an input it cannot read at all (a directory).
    await finish();
    throw new McpmgrError("INVALID_ARGUMENT", `standard input cannot be read: ${firstLine(err)}`, {
      hint: "proxy stdio reads JSON-RPC messages, one a line, from a pipe or a file, as an AI client starts it",
    });
  }
  return { finished };
}
