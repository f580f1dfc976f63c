/**
 * `resources/subscribe` and `resources/unsubscribe` of a 2025-era client session, for a workload the
 * session reaches as a 2026-07-28 server (one that speaks only that revision). That revision has
 * neither method: a client follows a resource by holding a `subscriptions/listen` stream that names
 * its URI. So the gateway holds one per URI the session subscribed to, on the session's own
 * connection to the workload; its `notifications/resources/updated` reach the session as a 2025-era
 * workload's do (upstream-pool.ts). A stream that ends while the session still wants the resource
 * (the workload restarted, a hop dropped it) is opened again, after a pause that doubles (1 s up to
 * 30 s) while it keeps failing; unsubscribing, or the connection closing, ends it for good.
 */
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import type { Upstream } from "./upstream.ts";

type Subscription = Awaited<ReturnType<Upstream["listen"]>>;

/** Per connection: the URIs subscribed, each with its listen (undefined while it is being reopened). */
const held = new WeakMap<Upstream, Map<string, { subscription: Subscription | undefined }>>();

const FIRST_PAUSE_MS = 1_000;
const MAX_PAUSE_MS = 30_000;

/** Answers a session's resources/subscribe or resources/unsubscribe of `uri` at a 2026-07-28 workload. */
export async function memberSubscription(
  upstream: Upstream,
  method: "resources/subscribe" | "resources/unsubscribe",
  uri: string,
): Promise<Record<string, never>> {
  let byUri = held.get(upstream);
  if (byUri === undefined) {
    byUri = new Map();
    held.set(upstream, byUri);
  }
  if (method === "resources/unsubscribe") {
    const entry = byUri.get(uri);
    byUri.delete(uri);
    await entry?.subscription?.close().catch(() => {});
    return {};
  }
  if (byUri.has(uri)) return {};
  const subscription = await listenTo(upstream, uri);
  const entry = { subscription: subscription as Subscription | undefined };
  byUri.set(uri, entry);
  keepOpen(upstream, byUri, uri, entry);
  return {};
}

async function listenTo(upstream: Upstream, uri: string): Promise<Subscription> {
  const subscription = await upstream.listen({ resourceSubscriptions: [uri] });
  if (subscription.honoredFilter.resourceSubscriptions?.includes(uri)) return subscription;
  await subscription.close().catch(() => {});
  throw new ProtocolError(ProtocolErrorCode.InvalidParams, `the workload offers no updates of ${JSON.stringify(uri)}`);
}

/** Reopens the entry's listen whenever it ends, while the URI is still wanted and the connection open. */
function keepOpen(
  upstream: Upstream,
  byUri: Map<string, { subscription: Subscription | undefined }>,
  uri: string,
  entry: { subscription: Subscription | undefined },
): void {
  const wanted = () => byUri.get(uri) === entry && upstream.transport !== undefined;
  let pause = FIRST_PAUSE_MS / 2;
  const watch = async (subscription: Subscription): Promise<void> => {
    const opened = performance.now();
    const ended = await subscription.closed;
    if (ended === "local" || !wanted()) return;
    entry.subscription = undefined;
    pause = performance.now() - opened >= MAX_PAUSE_MS ? FIRST_PAUSE_MS : Math.min(pause * 2, MAX_PAUSE_MS);
    const retry = async (): Promise<void> => {
      if (!wanted()) return;
      try {
        const next = await listenTo(upstream, uri);
        if (!wanted()) return void next.close().catch(() => {});
        entry.subscription = next;
        void watch(next);
      } catch {
        pause = Math.min(pause * 2, MAX_PAUSE_MS);
        setTimeout(() => void retry(), pause).unref?.();
      }
    };
    setTimeout(() => void retry(), pause).unref?.();
  };
  if (entry.subscription !== undefined) void watch(entry.subscription);
}
