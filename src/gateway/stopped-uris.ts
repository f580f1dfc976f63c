/**
 * The URIs a gateway session stopped following at each workload (it unsubscribed, or its subscribe
 * failed), kept so that a member session still subscribed to one is told apart from a workload's own
 * update of a sub-resource (which MCP allows: an update may name a resource below the URI subscribed).
 *
 * A member session can be subscribed to a URI the session no longer follows. A 2025-era member answers
 * each request on its own, in no order the gateway can set: a subscribe and an unsubscribe in flight
 * together (the client changed its mind before the first was answered) may be applied the other way
 * round, and a subscribe that failed on the way back (a hop lost its answer) may have been applied all
 * the same. Its updates would reach the session until that member session ends. So an update of a URI
 * recorded here is not passed on, and the member session is sent the unsubscribe once (`correction`);
 * a subscribe of that URI the session sends meanwhile waits for that unsubscribe's answer (`settled`),
 * or the member could apply it first and be left unsubscribed under a session that follows the URI; and
 * the gateway's own changes to one URI go one after another (`inTurn`), for the same reason.
 *
 * At most MAX_STOPPED per workload (the oldest forgotten first): a record per URI a client ever touched
 * would be memory any client could grow.
 */

import { SdkHttpError } from "@modelcontextprotocol/client";
import type { Dropped } from "./member-subscriptions.ts";
import { anyResult } from "./sdk.ts";
import type { Upstream } from "./upstream.ts";

/** Records kept per workload. */
const MAX_STOPPED = 256;

/** Whether `uri` is `parent` or a resource below it (`parent/…`, `parent?…`, `parent#…`). */
export function within(uri: string, parent: string): boolean {
  if (uri === parent) return true;
  if (!uri.startsWith(parent)) return false;
  return parent.endsWith("/") || "/?#".includes(uri.charAt(parent.length));
}

export class StoppedUris {
  /** Per workload and URI: whether its unsubscribe was sent again already (once per stop). */
  readonly #byWorkload = new Map<string, Map<string, { corrected: boolean }>>();
  /** The last change of the gateway's own in flight, per workload and URI (`inTurn`). */
  readonly #turns = new Map<string, Map<string, Promise<void>>>();

  /** The session stopped following `uri` at `workload` (a stop again sends its unsubscribe once more). */
  stop(workload: string, uri: string): void {
    const byUri = this.#byWorkload.get(workload) ?? new Map<string, { corrected: boolean }>();
    this.#byWorkload.set(workload, byUri);
    byUri.delete(uri);
    byUri.set(uri, { corrected: false });
    if (byUri.size > MAX_STOPPED) byUri.delete(byUri.keys().next().value as string);
  }

  /** The session follows `uri` again. */
  resume(workload: string, uri: string): void {
    const byUri = this.#byWorkload.get(workload);
    byUri?.delete(uri);
    if (byUri?.size === 0) this.#byWorkload.delete(workload);
  }

  /** The URI stopped at `workload` that `uri` is (or lies below), if any. */
  match(workload: string, uri: string): string | undefined {
    const byUri = this.#byWorkload.get(workload);
    if (byUri === undefined) return undefined;
    if (byUri.has(uri)) return uri;
    for (const stopped of byUri.keys()) if (within(uri, stopped)) return stopped;
    return undefined;
  }

  /** Whether `stopped`'s unsubscribe is to be sent again now: the first time only since it was stopped. */
  correction(workload: string, stopped: string): boolean {
    const entry = this.#byWorkload.get(workload)?.get(stopped);
    if (entry === undefined || entry.corrected) return false;
    entry.corrected = true;
    return true;
  }

  /**
   * Runs `send`, a change of the gateway's own to `uri` at the member (an unsubscribe sent again, a subscribe
   * sent again by upstream-pool.ts `realign`), once the ones before it are answered: the member could apply
   * two in flight together in either order. Its outcome, which a later change's failure never reaches.
   */
  inTurn<T>(workload: string, uri: string, send: () => Promise<T>): Promise<T> {
    const byUri = this.#turns.get(workload) ?? new Map<string, Promise<void>>();
    this.#turns.set(workload, byUri);
    const sent = (byUri.get(uri) ?? Promise.resolve()).then(send);
    const tail = sent.then(
      () => {},
      () => {},
    );
    byUri.set(uri, tail);
    void tail.then(() => {
      if (byUri.get(uri) !== tail) return;
      byUri.delete(uri);
      if (byUri.size === 0) this.#turns.delete(workload);
    });
    return sent;
  }

  /** Resolves once no change of the gateway's own to `uri` is in flight at `workload`. */
  async settled(workload: string, uri: string): Promise<void> {
    await this.#turns.get(workload)?.get(uri);
  }
}

export async function unsubscribeAgain(client: Upstream, uri: string, timeoutMs: number): Promise<void> {
  if (client.getProtocolEra() !== "legacy") return;
  await client
    .request({ method: "resources/unsubscribe", params: { uri } }, anyResult, { timeout: timeoutMs })
    .catch(() => {});
}

/**
 * How a subscribe sent once more by upstream-pool.ts `realign` reports its failure. One that is no refusal
 * leaves the URI followed, for the next connection's re-subscription to take, as after any restart: the
 * member forgot the session (404: `forgotten` has the connection replaced), or the connection is no longer
 * `current` (replaced meanwhile, or the session ended). Dropped (the session told) otherwise: taking it out
 * for a restart would leave the session deaf to a URI it follows, and warned of it for nothing.
 */
export function realignReport(
  workload: string,
  subscriptions: { dropped(workload: string, uris: readonly string[], why: string): void },
  forgotten: () => void,
  current: () => boolean,
): { report: Dropped; context: string } {
  const report: Dropped = (lost, why, cause) => {
    if (cause instanceof SdkHttpError && cause.status === 404) forgotten();
    if (current()) subscriptions.dropped(workload, lost, why);
  };
  return { report, context: "its unsubscribe, sent before the session subscribed again, may have been applied last" };
}
