/**
 * `resources/subscribe` and `resources/unsubscribe` of a 2025-era client session, for a workload the
 * session reaches as a 2026-07-28 server (one that speaks only that revision). That revision has
 * neither method: a client follows resources by holding a `subscriptions/listen` stream that names
 * their URIs. So the gateway holds one such stream per session connection, naming every URI the
 * session subscribed to there; its `notifications/resources/updated` reach the session as a 2025-era
 * workload's do (upstream-pool.ts).
 *
 * One stream, not one per URI: each open stream holds a connection to the workload and a request
 * there for as long as it lasts, so a session with a few hundred subscriptions would hold a few
 * hundred of each (the gateway's HTTP client, proxy/upstream/, has no ceiling of its own to stop it). A
 * change to the set opens a stream for the new set and, once the workload has acknowledged it, closes
 * the old one (so no update falls between them). A stream that ends while the session still wants
 * its resources (the workload restarted, a hop dropped it) is opened again, after a pause that
 * doubles (1 s up to 30 s) while it keeps failing; unsubscribing from the last URI, or the connection
 * closing, ends it for good. What the workload sent while it was down reached no one: its reopening is
 * told (`whenReopened`), for the session to hear that its URIs may have changed.
 *
 * Every acknowledgement is checked for every URI the session still follows, not just the one being
 * added: a workload may honour a new URI yet leave an older one out (it no longer offers it), and
 * that one's updates would stop without the session knowing. A URI left out is dropped from the set
 * and reported (`Dropped`: the session is told), as a refused subscribe is refused. A new connection
 * for a session that followed resources on an earlier one (the workload restarted) follows them
 * again with `followAgain`, under the same check.
 */
import { ProtocolErrorCode } from "@modelcontextprotocol/server";
import { GatewayRefusal } from "./member-words.ts";
import type { Upstream } from "./upstream.ts";

type Subscription = Awaited<ReturnType<Upstream["listen"]>>;

/**
 * URIs the session no longer follows at the workload (with why), for the session to be told; `cause`: the
 * failure that dropped them, when one did (none when the workload's acknowledgement left them out).
 */
export type Dropped = (uris: readonly string[], why: string, cause?: unknown) => void;

/** Per connection: the URIs the session follows there, and the one stream that names them. */
interface Held {
  readonly uris: Set<string>;
  subscription: Subscription | undefined;
  /** Changes to the set, applied one after another (each waits for the workload's acknowledgement). */
  queue: Promise<unknown>;
  pause: number;
  readonly dropped: Dropped;
}

const held = new WeakMap<Upstream, Held>();
/** Who hears that a connection's stream was opened again after it ended (`whenReopened`). */
const reopenedHandlers = new WeakMap<Upstream, () => void>();

/**
 * `then` runs each time `upstream`'s stream, having ended, is opened again: what the workload sent while
 * it was down reached no one (the pool announces the session's URIs there as updated).
 */
export function whenReopened(upstream: Upstream, then: () => void): void {
  reopenedHandlers.set(upstream, then);
}

const FIRST_PAUSE_MS = 1_000;
const MAX_PAUSE_MS = 30_000;
/** URIs one session follows at one workload: the stream's request names them all, so it stays bounded. */
export const MAX_SUBSCRIBED_URIS = 256;

function heldAt(upstream: Upstream, dropped: Dropped): Held {
  let entry = held.get(upstream);
  if (entry === undefined) {
    entry = { uris: new Set(), subscription: undefined, queue: Promise.resolve(), pause: FIRST_PAUSE_MS / 2, dropped };
    held.set(upstream, entry);
  }
  return entry;
}

/** Runs `change` after the connection's earlier changes (each waits for the workload's acknowledgement). */
async function inTurn(state: Held, change: () => Promise<void>): Promise<void> {
  const next = state.queue.then(change);
  state.queue = next.catch(() => {});
  await next;
}

/**
 * Answers a session's resources/subscribe or resources/unsubscribe of `uri` at a 2026-07-28 workload;
 * `dropped` hears of URIs a later acknowledgement leaves out.
 */
export async function memberSubscription(
  upstream: Upstream,
  method: "resources/subscribe" | "resources/unsubscribe",
  uri: string,
  dropped: Dropped,
): Promise<Record<string, never>> {
  const state = heldAt(upstream, dropped);
  await inTurn(state, () =>
    method === "resources/subscribe" ? subscribe(upstream, state, uri) : unsubscribe(upstream, state, uri),
  );
  return {};
}

/**
 * Follows `uris` at `upstream`, a new connection for a session that followed them on an earlier one
 * (the workload restarted): one stream naming them all. Those its acknowledgement leaves out, or all
 * of them when the workload refuses the stream, go to `dropped`, their reason after `why` (the
 * connection's later changes report to `dropped` without it: they are not the restart's doing).
 */
export async function followAgain(
  upstream: Upstream,
  uris: readonly string[],
  dropped: Dropped,
  why: string,
  /** The refusal in words the gateway may log (session-subscriptions.ts `describe`). */
  describe: (err: unknown) => string,
): Promise<void> {
  const state = heldAt(upstream, dropped);
  await inTurn(state, async () => {
    const wanted = uris.filter((uri) => !state.uris.has(uri));
    if (wanted.length === 0) return;
    for (const uri of wanted) state.uris.add(uri);
    try {
      adopt(upstream, state, await upstream.listen({ resourceSubscriptions: [...state.uris] }), why);
    } catch (err) {
      for (const uri of wanted) state.uris.delete(uri);
      dropped(wanted, `${why}: the workload refused the subscription stream (${describe(err)})`, err);
    }
  });
}

async function subscribe(upstream: Upstream, state: Held, uri: string): Promise<void> {
  if (state.uris.has(uri)) return;
  if (state.uris.size >= MAX_SUBSCRIBED_URIS)
    throw new GatewayRefusal(
      ProtocolErrorCode.InvalidParams,
      `this session already follows ${MAX_SUBSCRIBED_URIS} resources of the workload; unsubscribe from some first`,
    );
  const next = await upstream.listen({ resourceSubscriptions: [...state.uris, uri] });
  if (!next.honoredFilter.resourceSubscriptions?.includes(uri)) {
    await next.close().catch(() => {});
    throw new GatewayRefusal(
      ProtocolErrorCode.InvalidParams,
      `the workload offers no updates of ${JSON.stringify(uri)}`,
    );
  }
  state.uris.add(uri);
  adopt(upstream, state, next);
}

async function unsubscribe(upstream: Upstream, state: Held, uri: string): Promise<void> {
  if (!state.uris.delete(uri)) return;
  if (state.uris.size === 0) return replace(upstream, state, undefined);
  try {
    adopt(upstream, state, await upstream.listen({ resourceSubscriptions: [...state.uris] }));
  } catch {
    // The old stream would go on naming the URI: end it, and reopen for the rest as after a drop.
    replace(upstream, state, undefined);
    reopenLater(upstream, state);
  }
}

/**
 * Makes `next`, just acknowledged, the connection's stream; the URIs its acknowledgement leaves out are
 * no longer followed (and reported, after `context` when given). When none is left, the stream is closed instead.
 */
function adopt(upstream: Upstream, state: Held, next: Subscription, context?: string): void {
  const honored = new Set(next.honoredFilter.resourceSubscriptions ?? []);
  const lost = [...state.uris].filter((uri) => !honored.has(uri));
  for (const uri of lost) state.uris.delete(uri);
  if (state.uris.size > 0) replace(upstream, state, next);
  else {
    void next.close().catch(() => {});
    replace(upstream, state, undefined);
  }
  const why = "the workload no longer acknowledges them on the subscription stream";
  if (lost.length > 0) state.dropped(lost, context === undefined ? why : `${context}: ${why}`);
}

/** Makes `next` the connection's stream (watched for drops) and closes the one it replaces. */
function replace(upstream: Upstream, state: Held, next: Subscription | undefined): void {
  const old = state.subscription;
  state.subscription = next;
  if (next !== undefined) void watch(upstream, state, next);
  void old?.close().catch(() => {});
}

const alive = (upstream: Upstream) => upstream.transport !== undefined;

async function watch(upstream: Upstream, state: Held, subscription: Subscription): Promise<void> {
  const opened = performance.now();
  const ended = await subscription.closed;
  if (ended === "local" || state.subscription !== subscription || !alive(upstream)) return;
  state.subscription = undefined;
  // One that lasted is reopened soon; one that keeps ending at once, less and less often.
  state.pause = performance.now() - opened >= MAX_PAUSE_MS ? FIRST_PAUSE_MS : Math.min(state.pause * 2, MAX_PAUSE_MS);
  reopenLater(upstream, state);
}

function reopenLater(upstream: Upstream, state: Held): void {
  const reopen = async (): Promise<void> => {
    if (state.subscription !== undefined || state.uris.size === 0 || !alive(upstream)) return;
    try {
      const next = await upstream.listen({ resourceSubscriptions: [...state.uris] });
      if (state.subscription !== undefined || state.uris.size === 0 || !alive(upstream))
        return void next.close().catch(() => {});
      adopt(upstream, state, next);
      if (state.uris.size > 0) reopenedHandlers.get(upstream)?.();
    } catch {
      state.pause = Math.min(state.pause * 2, MAX_PAUSE_MS);
      reopenLater(upstream, state);
    }
  };
  // In the queue, so that a reopen never races a subscribe or unsubscribe.
  setTimeout(() => void (state.queue = state.queue.then(reopen).catch(() => {})), state.pause).unref?.();
}
