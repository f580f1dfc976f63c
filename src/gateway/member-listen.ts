/**
 * List changes of a workload reached as a 2026-07-28 server. That revision has no session for a
 * server to announce `list_changed` on: a client hears of changes only on a `subscriptions/listen`
 * stream it opened for them. So the catalog connection to such a workload keeps one open for the
 * kinds the workload says it announces (its capabilities' `listChanged`), and the notifications reach
 * the connection's handler as a 2025-era session's do (the SDK dispatches them alike).
 *
 * A listen stream ends when the workload restarts, ends it itself, or a hop on the way drops it: it is
 * opened again after a pause that doubles (1 s up to 30 s) while it keeps failing. Everything is listed
 * again each time a listen is acknowledged: a change announced before that reached no stream (the
 * catalog's first listing comes before the first listen; a reopened one follows a gap).
 */
import type { Upstream } from "./upstream.ts";

export interface ListWatchOptions {
  /** False once the connection is no longer the catalog's (closed, or replaced): stop. */
  readonly current: () => boolean;
  /** Lists everything again (after a listen was acknowledged). */
  readonly relistAll: () => void;
  readonly log: (text: string) => void;
  /**
   * A failure as the gateway's log may give it (member-failure-log.ts `failureText`): a member that
   * holds secrets is not quoted, since its error page may print them and the gateway cannot redact them.
   */
  readonly describe: (err: unknown) => string;
}

const FIRST_PAUSE_MS = 1_000;
const MAX_PAUSE_MS = 30_000;

type Filter = Parameters<Upstream["listen"]>[0];

/** The kinds of change `client`'s workload announces, as a listen filter; undefined when none. */
function filterOf(client: Upstream): Filter | undefined {
  const capabilities = client.getServerCapabilities() ?? {};
  const filter: Filter = {};
  if (capabilities.tools?.listChanged === true) filter.toolsListChanged = true;
  if (capabilities.prompts?.listChanged === true) filter.promptsListChanged = true;
  if (capabilities.resources?.listChanged === true) filter.resourcesListChanged = true;
  return Object.keys(filter).length > 0 ? filter : undefined;
}

/** Keeps a listen open on `client` (a connection reached as a 2026-07-28 server) while it is current. */
export function watchListChanges(client: Upstream, options: ListWatchOptions): void {
  const filter = filterOf(client);
  if (filter === undefined) return;
  let pause = FIRST_PAUSE_MS / 2;
  let failing = false;
  const open = async (): Promise<void> => {
    if (!options.current()) return;
    let ended: "local" | "graceful" | "remote" = "remote";
    let lasted = 0;
    try {
      const subscription = await client.listen(filter);
      if (!options.current()) return void subscription.close().catch(() => {});
      // Changes made before this listen was acknowledged went to no stream: the first listing (at
      // join) came before it, and a reopened one follows a gap. So everything is listed again now.
      options.relistAll();
      const opened = performance.now();
      ended = await subscription.closed;
      lasted = performance.now() - opened;
      failing = false;
    } catch (err) {
      if (!options.current()) return;
      // One line per streak of failures, not one per retry.
      if (!failing) options.log(`cannot listen for its list changes (${options.describe(err)}); retrying`);
      failing = true;
    }
    if (ended === "local" || !options.current()) return;
    // A stream that lasted is reopened soon; one that keeps failing or ending at once, less and less often.
    pause = lasted >= MAX_PAUSE_MS ? FIRST_PAUSE_MS : Math.min(pause * 2, MAX_PAUSE_MS);
    const timer = setTimeout(() => void open(), pause);
    timer.unref?.();
  };
  void open();
}
