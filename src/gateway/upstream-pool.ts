/**
 * The connections one gateway session holds: one upstream session per workload, opened on
 * the first request that needs it. Because each gateway session has its own, whatever a
 * workload sends back on it (sampling, elicitation and roots requests, log messages,
 * resource updates) belongs to exactly that gateway session; member-traffic.ts routes it there.
 *
 * The resources the session follows are kept here, by workload (session-subscriptions.ts), not by
 * connection: a new connection to a workload subscribes them again before it serves anything. A
 * connection found lost (the workload forgot its session, or its event stream could not be reopened)
 * while the session follows resources there is replaced at once, not at the session's next request:
 * the session may send none while it waits for updates. The same when a workload the session follows
 * resources at joins the group again (a restart the gateway saw as a leave and a join). A connection
 * replaced only because its event stream could not be reopened may still answer: the calls in flight on
 * it are left to finish (within the request timeout) before its member session is ended, and resource
 * updates are taken from the new one only. An update sent in the gap reached the session on neither, so each
 * URI followed again is announced as updated (changed-maybe.ts): at least once; the same when a connection's
 * event stream (or listen stream) is opened again after it ended. A subscribe answered on a replaced
 * connection is carried to the current one (`carry`), whose re-subscription may have missed it. An update
 * of a URI the session stopped following is not passed on (`#stray`), and a URI the session subscribed to
 * again while its unsubscribe was in flight is subscribed once more after that (`realign`): a 2025-era
 * member may apply the two in either order.
 */
import type { LoggingLevel } from "@modelcontextprotocol/client";
import type { AnswerLimit } from "../proxy/answer-limit.ts";
import { droppedStreamText } from "../proxy/event-stream.ts";
import { AwaitedRenewals, notTaken } from "./carried-subscribes.ts";
import type { GroupCatalog } from "./catalog.ts";
import { ChangedMaybe } from "./changed-maybe.ts";
import { failureText } from "./member-failure-log.ts";
import { quotable } from "./member-words.ts";
import { whenReopened } from "./member-subscriptions.ts";
import { memberTraffic, type PoolPeer } from "./member-traffic.ts";
import { PoolCalls, type RequestId } from "./pool-calls.ts";
import { FIRST_RESUME_MS, MAX_RESUME_MS, ReplacementPace } from "./replacement-pace.ts";
import { SessionSubscriptions } from "./session-subscriptions.ts";
import { realignReport, unsubscribeAgain } from "./stopped-uris.ts";
import { connectUpstream, endUpstream, MEMBER_SESSION_END_MS, type Upstream } from "./upstream.ts";

export class UpstreamPool {
  readonly #catalog: GroupCatalog;
  readonly #timeoutMs: number;
  readonly #peer: PoolPeer | undefined;
  readonly #open = new Map<string, Promise<Upstream>>();
  /** The connection each opening gave, once it has (to tell a current connection from an earlier one). */
  readonly #opened = new WeakMap<Promise<Upstream>, Upstream>();
  readonly #calls = new PoolCalls();
  #logLevel: LoggingLevel | undefined;
  #closed = false;
  /** What the session follows at each workload (2025-era sessions only: a 2026-07-28 caller subscribes to nothing). */
  readonly subscriptions: SessionSubscriptions;
  /** How soon a lost connection is opened again (the pause grows while new ones are lost soon). */
  readonly #pace = new ReplacementPace();
  /** Connections replaced but left to finish their calls (`forget` with `drain`), ended with the session. */
  readonly #draining = new Set<Upstream>();
  /** The session's own announcements of URIs whose updates may have been lost. */
  readonly #changedMaybe: ChangedMaybe;
  /** Connections whose event stream failed to open while the session followed nothing there (never reopened). */
  readonly #streamless = new WeakSet<Upstream>();
  /** Subscribes waiting for a new connection's re-subscription (`carry`): its failures are their answers. */
  readonly #awaited = new AwaitedRenewals();

  /**
   * Without a peer (a 2026-07-28 caller's pool), workloads are reached as 2026-07-28 servers where they
   * can be (upstream.ts `preferModern`), and a 2025-era workload's requests are refused (such a caller
   * takes none).
   */
  constructor(catalog: GroupCatalog, timeoutMs: number, peer?: PoolPeer) {
    this.#catalog = catalog;
    this.#timeoutMs = timeoutMs;
    this.#peer = peer;
    this.#changedMaybe = new ChangedMaybe((uri) =>
      peer?.notify({ jsonrpc: "2.0", method: "notifications/resources/updated", params: { uri } }, undefined),
    );
    this.subscriptions = new SessionSubscriptions({
      level: () => this.#logLevel,
      notify: (params) => peer?.notify({ jsonrpc: "2.0", method: "notifications/message", params }, undefined),
      log: (text) => catalog.warn(text),
      shown: (uri) => catalog.shownUri(uri),
      // Quoted only for a member known not to hold secrets (one gone meanwhile may have held some).
      describe: (workload, err) => failureText(err, this.quotes(workload)),
    });
  }

  /** Whether errors may quote the workload's own words (member-words.ts: not a member that holds secrets). */
  quotes(workload: string): boolean {
    return quotable(this.#catalog.member(workload));
  }

  get(workload: string): Promise<Upstream> {
    let opening = this.#open.get(workload);
    if (opening === undefined) {
      const connecting: Promise<Upstream> = this.#connect(workload, () => connecting);
      opening = connecting;
      this.#open.set(workload, opening);
      connecting
        .then((client) => {
          this.#opened.set(connecting, client);
          this.#pace.opened(client);
        })
        .catch(() => {});
      // A failed open is retried by the next request rather than remembered.
      opening.catch(() => this.#drop(workload, connecting));
    }
    return opening;
  }

  /**
   * Takes `opening` out, if it is still the workload's current one: an earlier connection's end (its
   * close after a `forget`, a late failure) must not take out the one opened since, which would then
   * be held by no one, its session open at the member and its stream never closed.
   */
  #drop(workload: string, opening: Promise<Upstream>): void {
    if (this.#open.get(workload) === opening) this.#open.delete(workload);
  }

  /** `opening`: the opening this connection is (its close takes it out only while it is the current one). */
  async #connect(workload: string, opening: () => Promise<Upstream>): Promise<Upstream> {
    const member = this.#catalog.member(workload);
    if (member === undefined) throw new Error(this.#catalog.whyUnavailable(workload) ?? `no workload '${workload}'`);
    const peer = this.#peer;
    const client = await connectUpstream(
      member,
      {
        // Its requests, log lines and updates go to this session's client (member-traffic.ts).
        ...memberTraffic(workload, peer, {
          related: () => this.#calls.latest(workload),
          // A connection being drained was replaced: the new one brings the updates (once).
          takesUpdate: (uri) => this.#open.get(workload) === opening() && !this.#stray(workload, opening(), uri),
        }),
        onClose: () => this.#drop(workload, opening()),
        onLost: (why) => this.#lost(workload, opening(), why),
        onReopened: () => this.#reopened(workload, opening()),
        answerLimit: this.#catalog.answerLimit(workload),
      },
      this.#timeoutMs,
      this.#catalog.eraOf(workload),
      peer === undefined,
    );
    if (this.#closed) {
      await client.close();
      throw new Error("the gateway session ended");
    }
    // A 2026-07-28 member's listen stream reopened after it ended: as the event stream's reopening.
    if (peer !== undefined) whenReopened(client, () => this.#reopened(workload, opening()));
    if (this.#logLevel !== undefined && client.getServerCapabilities()?.logging)
      await client.setLoggingLevel(this.#logLevel).catch(() => {});
    // Before anything is sent on it: a request that met the forgotten session goes again on this one.
    if (peer !== undefined)
      this.#changedMaybe.followedAgain(
        await this.subscriptions.renew(workload, client, this.#timeoutMs, {
          report: this.#awaited.report(workload, this.subscriptions),
        }),
      );
    return client;
  }

  /**
   * A connection found lost: replaced now when the session follows resources there (else by the next
   * request). One whose stream alone was lost (`stream`) may still answer the calls in flight on it.
   */
  #lost(workload: string, opening: Promise<Upstream>, why: "forgotten" | "stream"): void {
    const client = this.#opened.get(opening);
    // Found while it was still opening (its first event stream refused): once it has opened.
    if (client === undefined) return void opening.then(() => this.#lost(workload, opening, why)).catch(() => {});
    if (this.subscriptions.holds(workload)) this.forget(workload, client, why === "stream");
    // Nothing followed there yet (the session's first connection): replaced when a subscribe is (`carry`).
    else if (why === "stream") this.#streamless.add(client);
  }

  /**
   * The current connection's event stream (or a 2026-07-28 member's listen stream) was opened again on the
   * same member session: what the workload sent while it was down reached no one, so what the session
   * follows there is announced as updated.
   */
  #reopened(workload: string, opening: Promise<Upstream>): void {
    if (this.#peer !== undefined && this.#open.get(workload) === opening)
      this.#changedMaybe.reopened(workload, () => this.subscriptions.followed(workload));
  }

  /**
   * Whether an update of `uri` from `opening`'s member session is one the session does not follow, so not
   * passed on; the first time, that member session is sent the unsubscribe again (stopped-uris.ts).
   */
  #stray(workload: string, opening: Promise<Upstream>, uri: unknown): boolean {
    const stray = typeof uri === "string" ? this.subscriptions.stray(workload, uri) : undefined;
    const [client, again] = [this.#opened.get(opening), stray?.correct];
    if (again !== undefined && client !== undefined)
      void this.subscriptions.inTurn(workload, again, () => unsubscribeAgain(client, again, this.#timeoutMs));
    return stray !== undefined;
  }

  /**
   * An unsubscribe of `uri` the session withdrew (it subscribed again before its answer) went to `on` all
   * the same, and the member may have applied it after that subscribe: `uri` is subscribed there once more
   * (a set) and announced, as after any gap. Not when `on` was replaced (the current connection took `uri`).
   */
  async realign(workload: string, uri: string, on: Upstream): Promise<void> {
    if (this.#peer === undefined || this.replaced(workload, on) || !this.subscriptions.follows(workload, uri)) return;
    const current = () => !this.#closed && !this.replaced(workload, on);
    const report = realignReport(workload, this.subscriptions, () => this.forget(workload, on), current);
    const renew = () => this.subscriptions.renew(workload, on, this.#timeoutMs, { only: [uri], ...report });
    this.#changedMaybe.followedAgain(await this.subscriptions.inTurn(workload, uri, renew));
  }

  /**
   * Opens a connection to `workload` again (which subscribes the session's resources there), retried
   * after a growing pause while it fails. Not for a workload that left the group: its join does it.
   */
  #resume(workload: string, pause = FIRST_RESUME_MS): void {
    if (this.#closed || !this.subscriptions.holds(workload) || this.#catalog.member(workload) === undefined) return;
    this.get(workload).catch(() => {
      setTimeout(() => this.#resume(workload, Math.min(pause * 2, MAX_RESUME_MS)), pause).unref?.();
    });
  }

  /**
   * A subscribe of `uri` the workload answered on `on`: if `on` is no longer the workload's connection (it
   * was replaced while the subscribe was in flight, and the new one's re-subscription may have listed the
   * session's URIs before this one was added), `uri` is subscribed on the current one too, before the
   * session is told it follows it. With no current connection, the next one's re-subscription takes it.
   * Fails when the current one refuses `uri` (no longer followed then): the session's subscribe is
   * answered with that refusal rather than `{}` and a warning, as a subscribe refused outright is. When `on`
   * is current but its event stream never opened (`#streamless`: the session followed nothing there when it
   * failed), it is replaced as a lost one is, and the new one's re-subscription takes `uri`.
   */
  async carry(workload: string, uri: string, on: Upstream): Promise<void> {
    if (this.#peer === undefined) return;
    const current = await this.#open.get(workload)?.catch(() => undefined);
    if (current === on && this.#streamless.has(on)) {
      const failed = await this.#awaited.during(workload, uri, async () => {
        this.forget(workload, on, true);
        // The session is told it follows `uri` once the new connection has subscribed it (or failed to open).
        await this.#open.get(workload)?.catch(() => undefined);
      });
      if (failed !== undefined) throw notTaken(workload, uri, failed);
      return;
    }
    if (current === undefined || current === on) return;
    let refused: { why: string; cause: unknown } | undefined;
    let carrying = true;
    // Also the connection's reporter from now on when it holds no subscription stream yet (followAgain).
    const report = (lost: readonly string[], why: string, cause?: unknown) => {
      const mine = carrying && lost.includes(uri);
      if (mine) refused = { why, cause };
      const others = mine ? lost.filter((one) => one !== uri) : lost;
      if (others.length > 0) this.subscriptions.dropped(workload, others, why);
    };
    // Subscribing twice is harmless (a set at the member); subscribing never would leave the session deaf.
    const followed = await this.subscriptions.renew(workload, current, this.#timeoutMs, { only: [uri], report });
    carrying = false;
    if (refused !== undefined) {
      this.subscriptions.refused(workload, uri);
      throw notTaken(workload, uri, refused);
    }
    this.#changedMaybe.followedAgain(followed);
  }

  /** Whether `client`, a connection to `workload`, is no longer its current one while the session lasts. */
  replaced(workload: string, client: Upstream): boolean {
    const opening = this.#open.get(workload);
    return !this.#closed && (opening === undefined || this.#opened.get(opening) !== client);
  }

  /** `workload` joined the group (again): the resources the session followed there are followed again. */
  rejoined(workload: string): void {
    if (this.#peer !== undefined && !this.#open.has(workload)) this.#resume(workload);
  }

  /** The bound on `workload`'s answers on this pool's connections (the catalog's). */
  answerLimit(workload: string): AnswerLimit {
    return this.#catalog.answerLimit(workload);
  }

  /** A client's stream of this pool's session was dropped: it left `bytes` unread (one line in the log). */
  streamDropped(bytes: number): void {
    this.#catalog.warn(droppedStreamText(bytes));
  }

  /** Marks a gateway request as in flight on a workload's connection (`on`) until `release` is called. */
  track(workload: string, id: RequestId, on: Upstream): () => void {
    return this.#calls.track(workload, id, on);
  }

  /** The level the session set (`logging/setLevel`), if any. */
  get logLevel(): LoggingLevel | undefined {
    return this.#logLevel;
  }

  /** `logging/setLevel` for the session: applied to every open connection and to later ones. */
  async setLogLevel(level: LoggingLevel): Promise<void> {
    this.#logLevel = level;
    await Promise.all(
      [...this.#open.values()].map(async (opening) => {
        const client = await opening.catch(() => undefined);
        if (client?.getServerCapabilities()?.logging) await client.setLoggingLevel(level).catch(() => {});
      }),
    );
  }

  /** Sends a notification to every open connection (roots/list_changed). */
  async broadcast(method: string): Promise<void> {
    await Promise.all(
      [...this.#open.values()].map(async (opening) => {
        const client = await opening.catch(() => undefined);
        await client?.notification({ method }).catch(() => {});
      }),
    );
  }

  /**
   * Ends the session with a workload that left the group, or (`failed`: the connection a call found
   * forgotten, 404) that forgot it. A failure on a connection that is no longer the current one (a call
   * sent on the old session answered after another opened a new one) leaves the new one alone: ending
   * it would DELETE a live session under the calls in flight on it. `drain`: the session may still answer
   * (only its event stream was lost), so it is ended once the calls in flight on it are done.
   */
  forget(workload: string, failed?: Upstream, drain = false): void {
    const opening = this.#open.get(workload);
    if (opening === undefined) return;
    if (failed !== undefined && this.#opened.get(opening) !== failed) return;
    this.#drop(workload, opening);
    void opening.then((client) => this.#end(client, drain)).catch(() => {});
    // Forgotten by the workload, not gone from the group: the session's subscriptions there go on.
    if (failed !== undefined) this.#replaceLost(workload, failed);
  }

  /** Opens a connection again for `lost`'s subscriptions, after the pause `ReplacementPace` sets. */
  #replaceLost(workload: string, lost: Upstream): void {
    const pause = this.#pace.afterLoss(workload, lost);
    if (pause === 0) return this.#resume(workload);
    setTimeout(() => this.#resume(workload), pause).unref?.();
  }

  /** Ends `client`'s member session: at once, or (`drain`) once its calls are done, within the request timeout. */
  async #end(client: Upstream, drain: boolean): Promise<void> {
    if (drain) {
      this.#draining.add(client);
      await this.#calls.quiet(client, this.#timeoutMs);
      // Ended with the session's other connections if the session ended meanwhile (`close`).
      if (!this.#draining.delete(client)) return;
    }
    await endUpstream(client, MEMBER_SESSION_END_MS);
  }

  /**
   * Ends every member session (the gateway session ended): within MEMBER_SESSION_END_MS, after the
   * cancellations of the session's calls in flight (sent as its server closed) have reached the members.
   * A connection still opening past the bound is closed once it opens (`#connect`).
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#changedMaybe.close();
    const open = [...this.#open.values(), ...[...this.#draining].map((client) => Promise.resolve(client))];
    this.#open.clear();
    this.#draining.clear();
    if (open.length === 0) return;
    // A relayed call's cancellation is sent a turn after the session's end cancelled it.
    await new Promise((resolve) => setImmediate(resolve));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, MEMBER_SESSION_END_MS);
    });
    const ended = Promise.allSettled(open.map(async (opening) => endUpstream(await opening, MEMBER_SESSION_END_MS)));
    await Promise.race([ended, bound]);
    clearTimeout(timer);
  }
}
