/**
 * The gateway's own `notifications/resources/updated` to one session, for URIs whose updates may have
 * been lost: the workload sent them while no stream of the session's could carry them (its member session
 * was replaced, or its event stream was down until it was opened again), and MCP replays none. So the
 * session hears of each at least once (maybe once more than it changed), and reads it again if it cares.
 *
 * A new member session's URIs are announced at once (the pool paces replacements itself). A reopened
 * stream's are announced at once too, but a stream that keeps ending and being reopened (a hop that cuts
 * it every time) must not announce every URI at every reopening: within REANNOUNCE_MS of an
 * announcement, further reopenings make one more, at the end of that pause, which covers them all.
 */
const REANNOUNCE_MS = 30_000;

export class ChangedMaybe {
  readonly #notify: (uri: string) => void;
  /** Per workload: when its reopening was last announced, and the later one waiting for the pause to end. */
  readonly #reopened = new Map<string, { at: number; waiting?: ReturnType<typeof setTimeout> }>();
  readonly #pauseMs: number;
  #closed = false;

  constructor(notify: (uri: string) => void, pauseMs = REANNOUNCE_MS) {
    this.#notify = notify;
    this.#pauseMs = pauseMs;
  }

  /** `uris` were just followed again on a new member session. */
  followedAgain(uris: readonly string[]): void {
    if (!this.#closed) for (const uri of uris) this.#notify(uri);
  }

  /** `workload`'s stream was opened again: what the session follows there (`uris`, read when announced). */
  reopened(workload: string, uris: () => readonly string[]): void {
    if (this.#closed) return;
    const last = this.#reopened.get(workload);
    const now = performance.now();
    if (last === undefined || now - last.at >= this.#pauseMs) {
      this.#reopened.set(workload, { at: now });
      return this.followedAgain(uris());
    }
    if (last.waiting !== undefined) return;
    last.waiting = setTimeout(
      () => {
        this.#reopened.set(workload, { at: performance.now() });
        this.followedAgain(uris());
      },
      last.at + this.#pauseMs - now,
    );
    // Never what keeps the gateway running.
    last.waiting.unref?.();
  }

  /** The session ended: nothing more is announced. */
  close(): void {
    this.#closed = true;
    for (const { waiting } of this.#reopened.values()) clearTimeout(waiting);
    this.#reopened.clear();
  }
}
