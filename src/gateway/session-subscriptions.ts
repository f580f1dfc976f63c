/**
 * The resources one gateway session follows at each workload, kept by the session (its upstream pool)
 * rather than by the connection that subscribed them. A connection does not last as long as the
 * session: the workload restarts (it leaves the group and comes back, or forgets the member session
 * and answers 404), and the pool opens a new one. A subscription lives in the member session, so the
 * new one follows nothing; the session would wait for `notifications/resources/updated` that never
 * come. So each new connection to a workload the session follows resources at subscribes them again
 * (`renew`): a 2025-era workload with `resources/subscribe`, one reached as a 2026-07-28 server with
 * one listen stream naming them all (member-subscriptions.ts).
 *
 * A URI the workload no longer takes (its subscribe fails, its acknowledgement leaves it out) is no
 * longer followed, and the session is told in a `notifications/message` warning (the only way MCP
 * gives a server to tell a client something no request of its asked for): silence would look just
 * like a resource that never changes. Subscribing again tries again.
 *
 * An update the workload sent while no connection of the session's could carry it (the old one lost,
 * the new one not yet subscribed) reached no one, and MCP replays none: `renew` gives the URIs it
 * followed again, which the pool announces to the session as updated (at least once, never for a URI
 * the session unsubscribed from).
 *
 * A member session may hold a URI the session no longer follows (a 2025-era member applied a subscribe and
 * the unsubscribe after it the other way round, or a subscribe whose answer was lost): `stray` tells the
 * pool which updates not to pass on, and which unsubscribe to send again (stopped-uris.ts).
 */
import type { LoggingLevel } from "@modelcontextprotocol/client";
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import { type Dropped, followAgain, MAX_SUBSCRIBED_URIS } from "./member-subscriptions.ts";
import { GATEWAY_LOGGER } from "./member-log.ts";
import { anyResult } from "./sdk.ts";
import { StoppedUris, within } from "./stopped-uris.ts";
import type { Upstream } from "./upstream.ts";

/** Subscribes sent at once to a 2025-era workload when a session follows many resources there. */
const RENEW_BATCH = 16;

const LEVELS: readonly LoggingLevel[] = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency",
];

export interface SubscriptionNotices {
  /** The session's `logging/setLevel`, if any: a warning goes only when that level lets it through. */
  level(): LoggingLevel | undefined;
  /** Sends a `notifications/message` to the session. */
  notify(params: { level: LoggingLevel; logger: string; data: string }): void;
  /** The same line in the gateway's own log. */
  log(text: string): void;
  /**
   * A URI as the log line quotes it (catalog.ts `shownUri`: bare while a member holds secrets, as a key it
   * put there cannot be redacted); the session's notice names the URIs it subscribed to as they are.
   */
  shown?(uri: string): string;
  /**
   * A workload's refusal as these lines may give it (member-failure-log.ts `failureText`): not in the
   * words of a workload that holds secrets, whose error page may print them (the gateway cannot redact them).
   */
  describe(workload: string, err: unknown): string;
}

/**
 * A session's `resources/subscribe` (`admit` to `added` or `settled`) or `resources/unsubscribe` (`removed`
 * to `settled`) in flight: the ticket a sending again (a 404, a connection replaced under it) carries.
 */
export interface Subscribing {
  readonly workload: string;
  readonly uri: string;
  readonly method: "resources/subscribe" | "resources/unsubscribe";
  /**
   * The session changed its mind after sending this (an unsubscribe after a subscribe, a subscribe after an
   * unsubscribe): its answer must not change what is followed, and it is not sent again.
   */
  withdrawn: boolean;
}

export class SessionSubscriptions {
  readonly #held = new Map<string, Set<string>>();
  /** The session's subscribes in flight, by workload and URI (bounded by its requests in flight). */
  readonly #subscribing = new Map<string, Map<string, Subscribing[]>>();
  /** Its unsubscribes in flight, the same way (a later subscribe withdraws them). */
  readonly #unsubscribing = new Map<string, Map<string, Subscribing[]>>();
  readonly #notices: SubscriptionNotices;
  /** What the session stopped following, for a member session still subscribed to it (stopped-uris.ts). */
  readonly #stopped = new StoppedUris();

  constructor(notices: SubscriptionNotices) {
    this.#notices = notices;
  }

  /** Whether the session follows any resource at `workload`. */
  holds(workload: string): boolean {
    return (this.#held.get(workload)?.size ?? 0) > 0;
  }

  /**
   * Refuses a subscription to one more URI past MAX_SUBSCRIBED_URIS at `workload`, whatever revision it
   * speaks: the gateway keeps every one for the session's life, and subscribes them all again (before
   * anything else) on each new connection, so an unbounded set would be memory any client could grow,
   * and a wait before every request after a restart. The subscribes still in flight count too: a client
   * sending many at once would otherwise pass the bound before any is answered.
   */
  admit(workload: string, uri: string): Subscribing {
    const uris = this.#held.get(workload);
    const pending = this.#subscribing.get(workload);
    if (!uris?.has(uri) && !pending?.has(uri)) {
      const pendingOnly = [...(pending?.keys() ?? [])].filter((one) => !uris?.has(one)).length;
      if ((uris?.size ?? 0) + pendingOnly >= MAX_SUBSCRIBED_URIS)
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `this session already follows ${MAX_SUBSCRIBED_URIS} resources of the workload; unsubscribe from some first`,
        );
    }
    // An unsubscribe still in flight, sent before, is withdrawn: the member may apply it after this subscribe,
    // so once it is answered the URI is subscribed again there (upstream-pool.ts `realign`).
    withdraw(this.#unsubscribing, workload, uri);
    return pend(this.#subscribing, { workload, uri, method: "resources/subscribe", withdrawn: false });
  }

  /**
   * The change `subscribing` is answered or failed: a later change from now on no longer concerns it. A
   * subscribe that leaves its URI not followed (it failed, or the session unsubscribed meanwhile) may still
   * have been applied by the member: the URI is recorded as stopped. Recorded again when the unsubscribe
   * withdrew it (`removed` recorded it first): the member may have applied it after that unsubscribe and
   * after the one sent again, so a later update has the unsubscribe sent once more.
   */
  settled(subscribing: Subscribing): void {
    const { workload, uri } = subscribing;
    const subscribe = subscribing.method === "resources/subscribe";
    const pending = subscribe ? this.#subscribing : this.#unsubscribing;
    const byUri = pending.get(workload);
    const mine = byUri?.get(uri) ?? [];
    if (mine.includes(subscribing)) {
      const left = mine.filter((one) => one !== subscribing);
      if (left.length > 0) byUri?.set(uri, left);
      else forgetPending(pending, workload, uri);
    }
    if (subscribe && !this.follows(workload, uri)) this.#stopped.stop(workload, uri);
  }

  /**
   * The workload accepted the session's subscription to `uri`: followed from now on, unless the session
   * unsubscribed from it while that subscribe (`subscribing`) was in flight. Whether it is followed.
   */
  added(workload: string, uri: string, subscribing?: Subscribing): boolean {
    if (subscribing?.withdrawn) {
      this.settled(subscribing);
      return false;
    }
    let uris = this.#held.get(workload);
    if (uris === undefined) {
      uris = new Set();
      this.#held.set(workload, uris);
    }
    uris.add(uri);
    this.#stopped.resume(workload, uri);
    if (subscribing !== undefined) this.settled(subscribing);
    return true;
  }

  /**
   * The session unsubscribed from `uri` (not subscribed again on a later connection, whatever the workload
   * said); a subscribe of it still in flight, sent before, is withdrawn: its answer no longer makes it followed.
   * Gives the unsubscribe's ticket, until `settled`.
   */
  removed(workload: string, uri: string): Subscribing {
    withdraw(this.#subscribing, workload, uri);
    this.#forget(workload, uri);
    this.#stopped.stop(workload, uri);
    return pend(this.#unsubscribing, { workload, uri, method: "resources/unsubscribe", withdrawn: false });
  }

  /** The workload refused `uri` and the session is told so in its subscribe's answer: forgotten, no warning. */
  refused(workload: string, uri: string): void {
    this.#forget(workload, uri);
  }

  #forget(workload: string, uri: string): void {
    const uris = this.#held.get(workload);
    uris?.delete(uri);
    if (uris?.size === 0) this.#held.delete(workload);
  }

  /** `uris` are no longer followed at `workload`: forgotten here, and the session told why. */
  dropped(workload: string, uris: readonly string[], why: string): void {
    // Not the session's own unsubscribe: a subscribe of one in flight (a retry of the session's) still counts.
    for (const uri of uris) this.#forget(workload, uri);
    const line = (quoted: (uri: string) => string) => {
      const named =
        uris.length > 3
          ? `${uris.slice(0, 3).map(quoted).join(", ")} and ${uris.length - 3} more`
          : uris.map(quoted).join(", ");
      return `workload '${workload}' no longer sends updates of ${named} to this session: ${why}; subscribe again to retry`;
    };
    const text = line(quote);
    const shown = this.#notices.shown;
    this.#notices.log(shown ? line((uri) => quote(shown(uri))) : text);
    const level = this.#notices.level();
    if (level === undefined || LEVELS.indexOf(level) <= LEVELS.indexOf("warning"))
      this.#notices.notify({ level: "warning", logger: GATEWAY_LOGGER, data: text });
  }

  /**
   * A workload's `notifications/resources/updated` of `uri` that is not the session's to hear: `uri` is one
   * it stopped following (or lies below one), or it follows nothing there at all. Then `correct` names the
   * stopped URI whose unsubscribe is to be sent once more, the first time. Undefined: pass it on (a URI
   * followed, one below a URI followed, or one whose subscribe is in flight, and any other: MCP lets an
   * update name a sub-resource, which the gateway cannot tell from its URI).
   */
  stray(workload: string, uri: string): { correct?: string } | undefined {
    const covers = (uris: Iterable<string> | undefined) => {
      for (const one of uris ?? []) if (within(uri, one)) return true;
      return false;
    };
    if (this.follows(workload, uri) || covers(this.#held.get(workload))) return undefined;
    if (covers(this.#subscribing.get(workload)?.keys())) return undefined;
    const stopped = this.#stopped.match(workload, uri);
    if (stopped !== undefined) return this.#stopped.correction(workload, stopped) ? { correct: stopped } : {};
    return this.holds(workload) || this.#subscribing.has(workload) ? undefined : {};
  }

  /** Runs `send`, a change of the gateway's own to `uri` at the member, after those before it (stopped-uris.ts). */
  inTurn<T>(workload: string, uri: string, send: () => Promise<T>): Promise<T> {
    return this.#stopped.inTurn(workload, uri, send);
  }

  /**
   * Resolves once no change of the gateway's own to `uri` (an unsubscribe sent again) is in flight at
   * `workload`: a subscribe of it waits, so that the member cannot apply that unsubscribe after it.
   */
  async corrected(workload: string, uri: string): Promise<void> {
    await this.#stopped.settled(workload, uri);
  }

  /** The URIs the session follows at `workload`. */
  followed(workload: string): string[] {
    return [...(this.#held.get(workload) ?? [])];
  }

  /** Whether the session follows `uri` at `workload` (it has not unsubscribed, nor been told it was dropped). */
  follows(workload: string, uri: string): boolean {
    return this.#held.get(workload)?.has(uri) ?? false;
  }

  /**
   * Subscribes `client`, a new connection to `workload`, to everything the session followed there (or to
   * `only` of those); what the workload refuses is dropped (and the session told, its reason after `context`,
   * by default that the session was replaced), or given to `report` instead. Never fails: the connection
   * serves the session's other requests all the same. Gives the URIs it followed again.
   */
  async renew(
    workload: string,
    client: Upstream,
    timeoutMs: number,
    { only, report, context = AGAIN }: { only?: readonly string[]; report?: Dropped; context?: string } = {},
  ): Promise<string[]> {
    const held = [...(this.#held.get(workload) ?? [])];
    const uris = only === undefined ? held : held.filter((uri) => only.includes(uri));
    if (uris.length === 0) return [];
    const dropped = report ?? ((lost: readonly string[], why: string) => this.dropped(workload, lost, why));
    if (client.getProtocolEra() !== "legacy")
      await followAgain(client, uris, dropped, context, (err) => this.#notices.describe(workload, err));
    else
      for (let at = 0; at < uris.length; at += RENEW_BATCH) {
        const batch = uris.slice(at, at + RENEW_BATCH);
        const outcomes = await Promise.allSettled(
          batch.map((uri) =>
            client.request({ method: "resources/subscribe", params: { uri } }, anyResult, { timeout: timeoutMs }),
          ),
        );
        // By reason: one line per reason, with the failure itself (its code, for a subscribe carried: `carry`).
        const failures = new Map<string, { lost: string[]; cause: unknown }>();
        outcomes.forEach((outcome, i) => {
          if (outcome.status === "fulfilled") return;
          const why = this.#notices.describe(workload, outcome.reason);
          const failure = failures.get(why) ?? { lost: [] as string[], cause: outcome.reason as unknown };
          failure.lost.push(batch[i] as string);
          failures.set(why, failure);
        });
        for (const [why, { lost, cause }] of failures)
          dropped(lost, `${context}: subscribing again failed (${why})`, cause);
      }
    // Those dropped meanwhile (refused, or unsubscribed by the session while this went on) are not followed.
    return uris.filter((uri) => this.follows(workload, uri));
  }
}

type Pending = Map<string, Map<string, Subscribing[]>>;

function pend(pending: Pending, change: Subscribing): Subscribing {
  const byUri = pending.get(change.workload) ?? new Map<string, Subscribing[]>();
  byUri.set(change.uri, [...(byUri.get(change.uri) ?? []), change]);
  pending.set(change.workload, byUri);
  return change;
}

/** The changes of `uri` in flight in `pending` are superseded (and no longer kept). */
function withdraw(pending: Pending, workload: string, uri: string): void {
  for (const change of pending.get(workload)?.get(uri) ?? []) change.withdrawn = true;
  forgetPending(pending, workload, uri);
}

function forgetPending(pending: Pending, workload: string, uri: string): void {
  const byUri = pending.get(workload);
  byUri?.delete(uri);
  if (byUri?.size === 0) pending.delete(workload);
}

const AGAIN = "its session was replaced (the workload restarted, or forgot the session)";

const quote = (uri: string) => JSON.stringify(uri);
