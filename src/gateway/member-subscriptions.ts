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
 * closing, ends it for good.
 */
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import type { Upstream } from "./upstream.ts";

type Subscription = Awaited<ReturnType<Upstream["listen"]>>;

/** Per connection: the URIs the session follows there, and the one stream that names them. */
interface Held {
  readonly uris: Set<string>;
  subscription: Subscription | undefined;
  /** Changes to the set, applied one after another (each waits for the workload's acknowledgement). */
  queue: Promise<unknown>;
  pause: number;
}

const held = new WeakMap<Upstream, Held>();

const FIRST_PAUSE_MS = 1_000;
const MAX_PAUSE_MS = 30_000;
/** URIs one session follows at one workload: the stream's request names them all, so it stays bounded. */
export const MAX_SUBSCRIBED_URIS = 256;

/** Answers a session's resources/subscribe or resources/unsubscribe of `uri` at a 2026-07-28 workload. */
export async function memberSubscription(
  upstream: Upstream,
  method: "resources/subscribe" | "resources/unsubscribe",
  uri: string,
): Promise<Record<string, never>> {
  let entry = held.get(upstream);
  if (entry === undefined) {
    entry = { uris: new Set(), subscription: undefined, queue: Promise.resolve(), pause: FIRST_PAUSE_MS / 2 };
    held.set(upstream, entry);
  }
  const state = entry;
  const change = state.queue.then(() =>
    method === "resources/subscribe" ? subscribe(upstream, state, uri) : unsubscribe(upstream, state, uri),
  );
  state.queue = change.catch(() => {});
  await change;
  return {};
}

async function subscribe(upstream: Upstream, state: Held, uri: string): Promise<void> {
  if (state.uris.has(uri)) return;
  if (state.uris.size >= MAX_SUBSCRIBED_URIS)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `this session already follows ${MAX_SUBSCRIBED_URIS} resources of the workload; unsubscribe from some first`,
    );
  const next = await upstream.listen({ resourceSubscriptions: [...state.uris, uri] });
  if (!next.honoredFilter.resourceSubscriptions?.includes(uri)) {
    await next.close().catch(() => {});
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `the workload offers no updates of ${JSON.stringify(uri)}`,
    );
  }
  state.uris.add(uri);
  replace(upstream, state, next);
}

async function unsubscribe(upstream: Upstream, state: Held, uri: string): Promise<void> {
  if (!state.uris.delete(uri)) return;
  if (state.uris.size === 0) return replace(upstream, state, undefined);
  try {
    replace(upstream, state, await upstream.listen({ resourceSubscriptions: [...state.uris] }));
  } catch {
    // The old stream would go on naming the URI: end it, and reopen for the rest as after a drop.
    replace(upstream, state, undefined);
    reopenLater(upstream, state);
  }
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
      replace(upstream, state, next);
    } catch {
      state.pause = Math.min(state.pause * 2, MAX_PAUSE_MS);
      reopenLater(upstream, state);
    }
  };
  // In the queue, so that a reopen never races a subscribe or unsubscribe.
  setTimeout(() => void (state.queue = state.queue.then(reopen).catch(() => {})), state.pause).unref?.();
}
