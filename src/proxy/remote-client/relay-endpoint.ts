/**
 * Where `proxy stdio`'s relay (stdio-relay.ts) sends, and how: the remote's URL with mcpmgr's fetch under
 * the answer bound and the no-redirect rule, and, for a workload, its re-lookup (`follow`) when its endpoint
 * went away (stopped, or moved to another port by a restart) or forgot the session. The fetch always goes to
 * the endpoint current at the time of the request, so what was built once follows the workload.
 */
import type { UpstreamFetch, UpstreamInit } from "../authenticated-fetch.ts";
import { boundedFetch, defaultMaxMessageBytes } from "../answer-limit.ts";
import { refuseRedirects } from "./no-redirects.ts";
import { endpointGone, withHint } from "./relay-failures.ts";

export interface RelayEndpoint {
  readonly target: URL;
  /** mcpmgr's authenticated fetch; plain fetch when undefined. */
  readonly fetch: UpstreamFetch | undefined;
}

type Warn = (text: string) => void;

export class FollowedEndpoint {
  /** Where the relay sends, replaced when a workload is followed to its current endpoint (`lookUpAgain`). */
  private current: RelayEndpoint;
  /** Every request of the relay: to the current endpoint, bounded, never following a redirect. */
  readonly fetch: UpstreamFetch;

  private readonly follow: (() => Promise<RelayEndpoint>) | undefined;
  private readonly log: { info: Warn; warn: Warn };

  constructor(
    first: RelayEndpoint,
    follow: (() => Promise<RelayEndpoint>) | undefined,
    log: { info: Warn; warn: Warn },
    maxMessageBytes: number | undefined,
  ) {
    this.current = first;
    this.follow = follow;
    this.log = log;
    const plainFetch: UpstreamFetch = (url, init) => (this.current.fetch ?? ((u, i) => fetch(u, i)))(url, init);
    // A JSON answer or SSE event past the bound fails its request instead of growing the relay without end.
    const bounded = boundedFetch((url: string, init?: UpstreamInit) => plainFetch(url, init ?? {}), {
      maxBytes: maxMessageBytes ?? defaultMaxMessageBytes,
      onExceeded: (text) => log.warn(`remote: ${text}`),
    });
    this.fetch = refuseRedirects((url, init) => bounded(url, init));
  }

  get target(): URL {
    return this.current.target;
  }

  /** Whether the relay serves a workload it may look up again (`proxy stdio NAME`), not a URL it keeps. */
  get follows(): boolean {
    return this.follow !== undefined;
  }

  /** Whether `err` says a followed workload is no longer served where the relay sends (stopped, moved). */
  gone(err: unknown): boolean {
    return this.follow !== undefined && endpointGone(err);
  }

  /**
   * Looks a workload up again, with every check of the first lookup: returns why it cannot be reached (stopped:
   * its error, with how to start it), or undefined once the relay sends where it serves now. A URL is kept as it is.
   */
  async lookUpAgain(): Promise<unknown> {
    if (this.follow === undefined) return undefined;
    try {
      const was = this.current.target.href;
      this.current = await this.follow();
      if (this.current.target.href !== was)
        this.log.info(`the workload moved: relaying stdio to ${this.current.target.href}`);
      return undefined;
    } catch (err) {
      // Why the workload cannot be reached (stopped: how to start it), not a session that failed to open.
      this.log.warn(`remote: ${withHint(err)}`);
      return err ?? new Error("the workload could not be looked up again");
    }
  }
}
