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
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { errorMessage, McpmgrError } from "../../errors.ts";
import { AnswerTooLarge, boundedFetch, defaultMaxMessageBytes } from "../answer-limit.ts";
import type { UpstreamFetch, UpstreamInit } from "../authenticated-fetch.ts";
import type { JsonRpcMessage, JsonRpcRequest } from "../mcp-message.ts";
import type { LegacyClientTranslation } from "./legacy-client.ts";
import { refuseRedirects } from "./no-redirects.ts";
import {
  answerLost,
  endpointGone,
  LOST_ANSWER,
  lostAnswer,
  refusedCredentials,
  undelivered,
  withHint,
} from "./relay-failures.ts";
import { modernVersionOf } from "./request-headers.ts";
import { changingLists, sessionSetup } from "./session-setup.ts";
import { firstLine, watchClientEnds, writtenOut } from "./stdio-ends.ts";
import { StatelessRequests } from "./stateless-requests.ts";

export interface RelayEndpoint {
  readonly target: URL;
  /** mcpmgr's authenticated fetch; plain fetch when undefined. */
  readonly fetch: UpstreamFetch | undefined;
}

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
/** How long a new session's initialize may take before the message that needed it fails. */
const RENEWAL_MS = 30_000;
/** How many times in a row a quiet client's session is renewed (renewInTurn) before its next message. */
const QUIET_RENEWALS = 3;

export async function startStdioRelay(options: StdioRelayOptions): Promise<StdioRelay> {
  const { log } = options;
  /** Where the relay sends, replaced when a workload is followed to its current endpoint (renewSession). */
  let endpoint: RelayEndpoint = { target: options.target, fetch: options.fetch };
  const plainFetch: UpstreamFetch = (url, init) => (endpoint.fetch ?? ((u, i) => fetch(u, i)))(url, init);
  // A JSON answer or SSE event past the bound fails its request instead of growing the relay without end.
  const bounded = boundedFetch((url: string, init?: UpstreamInit) => plainFetch(url, init ?? {}), {
    maxBytes: options.maxMessageBytes ?? defaultMaxMessageBytes,
    onExceeded: (text) => log.warn(`remote: ${text}`),
  });
  const upstreamFetch = refuseRedirects((url, init) => bounded(url, init));
  const newRemote = () =>
    new StreamableHTTPClientTransport(endpoint.target, {
      fetch: (url, init) => upstreamFetch(String(url), init ?? {}),
    });
  // Replaced when the remote forgets the session (renewSession below).
  let remote = newRemote();
  const local = new StdioServerTransport(options.stdin, options.stdout);
  const stateless = new StatelessRequests({
    get url() {
      return endpoint.target;
    },
    fetch: upstreamFetch,
    deliver: (message) => void local.send(message as JSONRPCMessage),
    warn: (text) => log.warn(`remote: ${text}`),
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
  /**
   * The client's initialize the remote accepted, whether it sent `notifications/initialized` (both replayed by
   * renewSession), and the lists the answer it got said may change.
   */
  let opened: { initialize: JSONRPCMessage; initialized: boolean; lists: readonly string[] } | undefined;
  /** The answer renewSession waits for: its own initialize's, never passed to the client. */
  let renewal: { id: string; answered: (message: JSONRPCMessage) => void } | undefined;
  /** The ids renewSession gave its initializes: an answer that comes after its wait is dropped too. */
  const renewalIds = new Set<string>();
  /** The log level and subscriptions the client set up: set up again in a renewed session. */
  const setup = sessionSetup();
  /**
   * Set while the remote's session is gone and no new one could be opened (the remote answered the new
   * initialize with an error, or not at all, as a workload still restarting may): the next message
   * tries again first. Without it the relay sent on without a session, and every later message met a
   * 400 until the AI client was restarted.
   */
  let sessionLost = false;
  /** Sessions renewed (renewInTurn) since the client last sent a message. */
  let quietRenewals = 0;

  /**
   * The remote answered 404 for the session: it ended it, as a workload does when it restarts (an
   * upgrade, a crash, `mcpmgr restart`). An HTTP client then opens a new session; the stdio client
   * cannot (its session is the relay's life, until its AI client is restarted), so the relay does,
   * with the client's own initialize and initialized, and the message that met the 404 is sent again.
   * What the client set up in the old session (a log level, subscriptions) is set up again. A
   * list_changed per list the client was told may change tells it to read them again (an upgrade may
   * change them). Returns why no new session could be opened, or undefined once one is.
   */
  const renewSession = async (current: string | number | undefined): Promise<string | undefined> => {
    if (opened === undefined || closing) return "the relay is closing";
    sessionLost = true;
    // The requests still waiting on the old session never get their answers (its streams went with it):
    // answered now, not sent again (a tool call may have been carried out), so the client does not
    // wait for its own timeout, nor the relay its drain at the end of input.
    for (const waiting of [...inFlight]) {
      if (waiting === current) continue;
      inFlight.delete(waiting);
      void local.send({ jsonrpc: "2.0", id: waiting, error: { code: -32000, message: LOST_ANSWER } });
    }
    // A workload is looked up again first: a new session where it serves now, or why it cannot be reached.
    if (options.follow !== undefined) {
      try {
        const was = endpoint.target.href;
        endpoint = await options.follow();
        if (endpoint.target.href !== was) log.info(`the workload moved: relaying stdio to ${endpoint.target.href}`);
      } catch (err) {
        // Why the workload cannot be reached (stopped: how to start it), not a session that failed to open.
        log.warn(`remote: ${withHint(err)}`);
        return withHint(err);
      }
    }
    const previous = remote;
    previous.onmessage = undefined;
    previous.onerror = undefined;
    remote = newRemote();
    wireRemote();
    await previous.close().catch(() => {});
    await remote.start();
    const id = `mcpmgr-relay-renewal-${renewalIds.size + 1}`;
    renewalIds.add(id);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const answer = new Promise<JSONRPCMessage | undefined>((resolve) => {
      renewal = { id, answered: resolve };
      timer = setTimeout(() => resolve(undefined), RENEWAL_MS);
    });
    try {
      await remote.send({ ...opened.initialize, id } as JSONRPCMessage);
      const answered = await answer;
      if (answered === undefined) return failed(`no answer to a new session's initialize in ${RENEWAL_MS / 1000} s`);
      if (!("result" in answered))
        return failed(
          `the new session's initialize was refused: ${JSON.stringify((answered as { error?: unknown }).error)}`,
        );
      const result = answered.result as { protocolVersion?: unknown };
      if (typeof result.protocolVersion === "string") remote.setProtocolVersion(result.protocolVersion);
      if (opened.initialized) await remote.send({ jsonrpc: "2.0", method: "notifications/initialized" });
      // Their answers are the relay's own (dropped, as the initialize's): the client had its answers.
      for (const request of setup.replay()) {
        const again = `mcpmgr-relay-renewal-${renewalIds.size + 1}`;
        renewalIds.add(again);
        await remote.send({ ...request, id: again } as JSONRPCMessage).catch((err: unknown) => {
          log.warn(`remote: could not set up the new MCP session as the old one: ${errorMessage(err)}`);
        });
      }
      sessionLost = false;
      log.info("the remote ended the MCP session (it restarted): mcpmgr opened a new one for this client");
      for (const list of opened.lists)
        void local.send({ jsonrpc: "2.0", method: `notifications/${list}/list_changed` });
      return undefined;
    } catch (err) {
      return failed(errorMessage(err));
    } finally {
      clearTimeout(timer);
      renewal = undefined;
    }
  };
  const failed = (why: string): string => {
    log.warn(`remote: could not open a new MCP session: ${why}`);
    return `the remote ended the MCP session and a new one could not be opened: ${why}`;
  };
  /**
   * A 404 for a session the remote had given: it forgot the session. Or, for a workload, its endpoint gone
   * once a session was open: it is followed to where it serves now, in a new session.
   */
  const sessionGone = (err: unknown) =>
    opened !== undefined &&
    ((err instanceof StreamableHTTPError && err.code === 404 && remote.sessionId !== undefined) ||
      (options.follow !== undefined && endpointGone(err)));

  /**
   * The remote refused the client's initialize. A remote that speaks only 2026-07-28 does
   * that by design: the client is then served by translating, from this initialize on.
   * Anything else gets the refusal. Runs in the sending order, so nothing overtakes it.
   */
  const initializeRefused = async (initialize: JSONRPCMessage, refusal: JSONRPCMessage): Promise<void> => {
    const { translateForLegacyClient } = await import("./legacy-client.ts");
    const attempt = await translateForLegacyClient({
      url: endpoint.target,
      fetch: upstreamFetch,
      deliver: (message) => void local.send(message as JSONRPCMessage),
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
    quietRenewals = 0;
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
      if (opened !== undefined && isInitialized) opened.initialized = true;
      try {
        // A session lost earlier, and not opened again then: tried again before this message goes.
        const notRenewed = sessionLost && !pendingInitialize.has(id ?? "") ? await renewSession(id) : undefined;
        if (notRenewed !== undefined) throw new Error(notRenewed);
        try {
          await remote.send(message);
        } catch (err) {
          // Sent, and perhaps carried out, when the workload ended: never sent again (answered as lost below);
          // the workload is followed now (the other requests of its session answered as lost), for what comes next.
          if (answerLost(err)) {
            if (opened !== undefined) await renewSession(id);
            throw err;
          }
          if (!sessionGone(err)) throw err;
          const why = await renewSession(id);
          if (why !== undefined) throw new Error(why);
          // The renewal sent the client's initialized itself: twice, the transport would open a second
          // event stream, which the remote refuses (409).
          if (!isInitialized) await remote.send(message);
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
        const gone = options.follow !== undefined && endpointGone(err);
        if (initialize !== undefined && !refusedCredentials(err) && !gone) await initializeRefused(initialize, refusal);
        else void local.send(refusal);
      }
    });
  };
  const onRemoteMessage = (message: JSONRPCMessage) => {
    const id = !("method" in message) && "id" in message ? message.id : undefined;
    if (typeof id === "string" && renewalIds.has(id)) return renewal?.id === id ? renewal.answered(message) : undefined;
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
      if (typeof version === "string") remote.setProtocolVersion(version);
      if ("result" in message) {
        opened = { initialize, initialized: false, lists: changingLists(message) };
        sessionLost = false;
      }
    }
    void local.send(message);
  };
  /**
   * A 404 seen by the transport itself: a request's (renewed where it was sent, which replaces `remote`
   * first) or the event stream's, met as it opens again after the remote restarted. A client that only
   * listens (subscribed, waiting for updates) sends nothing that would renew the session, so the relay
   * asks, in turn with the messages (unless one renewed meanwhile): a ping on the session. Only its 404
   * renews: a server without event streams may answer their GET 404 too, and renewing on that alone
   * would open session after session.
   */
  const renewInTurn = () => {
    const gone = remote;
    sending = sending.then(async () => {
      // Not again after a failed renewal (the next message tries), nor without end for a remote that
      // forgets every session at once: a few while the client is quiet.
      if (remote !== gone || closing || sessionLost || quietRenewals >= QUIET_RENEWALS) return;
      quietRenewals++;
      const id = `mcpmgr-relay-renewal-${renewalIds.size + 1}`;
      renewalIds.add(id);
      await remote.send({ jsonrpc: "2.0", id, method: "ping" }).catch(async (err: unknown) => {
        if (sessionGone(err)) await renewSession(undefined);
      });
    });
  };
  const wireRemote = () => {
    remote.onmessage = onRemoteMessage;
    remote.onerror = (err) => {
      // A refused initialize is dealt with where it was sent (answered, or translated for); an answer over
      // the bound was logged when it was cut; a forgotten session is renewed (renewSession), and says so.
      if (sessionGone(err)) return renewInTurn();
      if (pendingInitialize.size > 0 || err instanceof AnswerTooLarge) return;
      log.warn(`remote: ${err.message}`);
    };
  };
  wireRemote();
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
  await remote.start();
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
