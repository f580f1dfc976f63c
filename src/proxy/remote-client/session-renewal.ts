/**
 * The relay's MCP session at the remote, and its renewal (stdio-relay.ts). A remote that answers 404 for the
 * session ended it, as a workload does when it restarts (an upgrade, a crash, `mcpmgr restart`). An HTTP
 * client then opens a new session; the stdio client cannot (its session is the relay's life, until its AI
 * client is restarted), so the relay does, with the client's own initialize and initialized, on a new SDK
 * transport. What the client set up in the old session (a log level, subscriptions: session-setup.ts) is set
 * up again, and a list_changed per list the client was told may change tells it to read them again (an
 * upgrade may change them). A workload is looked up again first (relay-endpoint.ts): a new session where it
 * serves now, or why it cannot be reached.
 */
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { errorMessage } from "../../errors.ts";
import type { FollowedEndpoint } from "./relay-endpoint.ts";
import { LOST_ANSWER, unknownSession400, withHint } from "./relay-failures.ts";
import type { SessionSetup } from "./session-setup.ts";

/** How long a new session's initialize may take before the message that needed it fails. */
const RENEWAL_MS = 30_000;
/** How many times in a row a quiet client's session is renewed (renewInTurn) before its next message. */
const QUIET_RENEWALS = 3;

/**
 * The client's initialize the remote accepted, whether it sent `notifications/initialized` (both replayed by
 * `renew`), and the lists the answer it got said may change.
 */
export interface OpenedSession {
  readonly initialize: JSONRPCMessage;
  initialized: boolean;
  readonly lists: readonly string[];
}

export interface SessionParts {
  readonly endpoint: FollowedEndpoint;
  /** Wires a new transport to the relay: its messages and errors. */
  readonly wire: (remote: StreamableHTTPClientTransport) => void;
  readonly setup: SessionSetup;
  /** To the stdio client. */
  readonly deliver: (message: JSONRPCMessage) => void;
  /** The requests sent and not answered yet, by id: those of the old session are answered as lost. */
  readonly inFlight: Set<string | number>;
  /** Runs `task` in turn with the client's messages. */
  readonly inTurn: (task: () => Promise<void>) => void;
  readonly closing: () => boolean;
  readonly log: { info(text: string): void; warn(text: string): void };
}

export class RemoteSession {
  /** The transport to the remote, replaced when the session is renewed. */
  remote: StreamableHTTPClientTransport;
  opened: OpenedSession | undefined;
  /**
   * Set while the remote's session is gone and no new one could be opened (the remote answered the new
   * initialize with an error, or not at all, as a workload still restarting may): the next message
   * tries again first. Without it the relay sent on without a session, and every later message met a
   * 400 until the AI client was restarted.
   */
  lost = false;
  /** Sessions renewed (renewInTurn) since the client last sent a message. */
  private quietRenewals = 0;
  /** The answer `renew` waits for: its own initialize's, never passed to the client. */
  private renewal: { id: string; answered: (message: JSONRPCMessage) => void } | undefined;
  /** The ids the relay gave its own requests: an answer that comes after its wait is dropped too. */
  private readonly ownIds = new Set<string>();

  private readonly parts: SessionParts;

  constructor(parts: SessionParts) {
    this.parts = parts;
    this.remote = this.newRemote();
  }

  private newRemote(): StreamableHTTPClientTransport {
    const remote = new StreamableHTTPClientTransport(this.parts.endpoint.target, {
      fetch: (url, init) => this.parts.endpoint.fetch(String(url), init ?? {}),
    });
    this.parts.wire(remote);
    return remote;
  }

  private ownId(): string {
    const id = `mcpmgr-relay-renewal-${this.ownIds.size + 1}`;
    this.ownIds.add(id);
    return id;
  }

  /** The client sent a message: quiet renewals count again from none. */
  clientSpoke(): void {
    this.quietRenewals = 0;
  }

  /** The remote accepted the client's initialize (`answer`): the session renewals open again. */
  open(initialize: JSONRPCMessage, lists: readonly string[]): void {
    this.opened = { initialize, initialized: false, lists };
    this.lost = false;
  }

  /** Whether `message` answers one of the relay's own requests (consumed here, never passed to the client). */
  ownAnswer(message: JSONRPCMessage): boolean {
    const id = !("method" in message) && "id" in message ? message.id : undefined;
    if (typeof id !== "string" || !this.ownIds.has(id)) return false;
    if (this.renewal?.id === id) this.renewal.answered(message);
    return true;
  }

  /**
   * A 404 for a session the remote had given (or a 400 that says it does not know it: unknownSession400): it
   * forgot the session. Or, for a workload, its endpoint gone once a session was open: it is followed to where
   * it serves now, in a new session.
   */
  gone(err: unknown): boolean {
    const forgotten =
      this.remote.sessionId !== undefined &&
      ((err instanceof StreamableHTTPError && err.code === 404) || unknownSession400(err));
    return this.opened !== undefined && (forgotten || this.parts.endpoint.gone(err));
  }

  /**
   * The event stream refused with 400 on a session: a remote that answers a forgotten session so
   * (unknownSession400) gives a GET no body the transport keeps, so the session is asked (renewInTurn), whose
   * answer says.
   */
  streamRefused(err: unknown): boolean {
    return (
      this.opened !== undefined &&
      this.remote.sessionId !== undefined &&
      err instanceof StreamableHTTPError &&
      err.code === 400 &&
      err.message.includes("Failed to open SSE stream")
    );
  }

  /**
   * Opens a new session for the client (the request `current` is the one that met the loss: the caller
   * decides whether it goes again). Returns why no new session could be opened, or undefined once one is.
   */
  async renew(current: string | number | undefined): Promise<string | undefined> {
    const { parts } = this;
    const opened = this.opened;
    if (opened === undefined || parts.closing()) return "the relay is closing";
    this.lost = true;
    // The requests still waiting on the old session never get their answers (its streams went with it):
    // answered now, not sent again (a tool call may have been carried out), so the client does not
    // wait for its own timeout, nor the relay its drain at the end of input.
    for (const waiting of [...parts.inFlight]) {
      if (waiting === current) continue;
      parts.inFlight.delete(waiting);
      parts.deliver({ jsonrpc: "2.0", id: waiting, error: { code: -32000, message: LOST_ANSWER } });
    }
    const unreachable = await parts.endpoint.lookUpAgain();
    if (unreachable !== undefined) return withHint(unreachable);
    const remote = await this.reconnect();
    const id = this.ownId();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const answer = new Promise<JSONRPCMessage | undefined>((resolve) => {
      this.renewal = { id, answered: resolve };
      timer = setTimeout(() => resolve(undefined), RENEWAL_MS);
    });
    try {
      await remote.send({ ...opened.initialize, id } as JSONRPCMessage);
      const answered = await answer;
      if (answered === undefined)
        return this.failed(`no answer to a new session's initialize in ${RENEWAL_MS / 1000} s`);
      if (!("result" in answered))
        return this.failed(
          `the new session's initialize was refused: ${JSON.stringify((answered as { error?: unknown }).error)}`,
        );
      const result = answered.result as { protocolVersion?: unknown };
      if (typeof result.protocolVersion === "string") remote.setProtocolVersion(result.protocolVersion);
      if (opened.initialized) await remote.send({ jsonrpc: "2.0", method: "notifications/initialized" });
      // Their answers are the relay's own (dropped, as the initialize's): the client had its answers.
      for (const request of parts.setup.replay()) {
        await remote.send({ ...request, id: this.ownId() } as JSONRPCMessage).catch((err: unknown) => {
          parts.log.warn(`remote: could not set up the new MCP session as the old one: ${errorMessage(err)}`);
        });
      }
      this.lost = false;
      parts.log.info("the remote ended the MCP session (it restarted): mcpmgr opened a new one for this client");
      for (const list of opened.lists) parts.deliver({ jsonrpc: "2.0", method: `notifications/${list}/list_changed` });
      return undefined;
    } catch (err) {
      return this.failed(errorMessage(err));
    } finally {
      clearTimeout(timer);
      this.renewal = undefined;
    }
  }

  /** A new transport, to the endpoint as it is now (a workload followed elsewhere), in place of the current one. */
  async reconnect(): Promise<StreamableHTTPClientTransport> {
    const previous = this.remote;
    previous.onmessage = undefined;
    previous.onerror = undefined;
    this.remote = this.newRemote();
    await previous.close().catch(() => {});
    await this.remote.start();
    return this.remote;
  }

  private failed(why: string): string {
    this.parts.log.warn(`remote: could not open a new MCP session: ${why}`);
    return `the remote ended the MCP session and a new one could not be opened: ${why}`;
  }

  /**
   * A 404 seen by the transport itself: a request's (renewed where it was sent, which replaces `remote`
   * first) or the event stream's, met as it opens again after the remote restarted. A client that only
   * listens (subscribed, waiting for updates) sends nothing that would renew the session, so the relay
   * asks, in turn with the messages (unless one renewed meanwhile): a ping on the session. Only its 404
   * renews: a server without event streams may answer their GET 404 too, and renewing on that alone
   * would open session after session.
   */
  renewInTurn(): void {
    const gone = this.remote;
    this.parts.inTurn(async () => {
      // Not again after a failed renewal (the next message tries), nor without end for a remote that
      // forgets every session at once: a few while the client is quiet.
      if (this.remote !== gone || this.parts.closing() || this.lost || this.quietRenewals >= QUIET_RENEWALS) return;
      this.quietRenewals++;
      await this.remote.send({ jsonrpc: "2.0", id: this.ownId(), method: "ping" }).catch(async (err: unknown) => {
        if (this.gone(err)) await this.renew(undefined);
      });
    });
  }
}
