/**
 * How soon a gateway session's lost member connection is opened again for its subscriptions
 * (upstream-pool.ts): at once after one that lasted, but after a pause that doubles (1 s up to 30 s) while
 * each new one is lost within 30 s of opening. A workload that forgets every session soon after it is
 * subscribed (it crashes on the subscription, expires sessions at once) would otherwise get a new member
 * session, and its subscriptions, without end or pause. The same pauses space the attempts while opening fails.
 */
import type { Upstream } from "./upstream.ts";

export const FIRST_RESUME_MS = 1_000;
export const MAX_RESUME_MS = 30_000;

export class ReplacementPace {
  /** When each connection opened, to tell a member that keeps forgetting new sessions. */
  readonly #openedAt = new WeakMap<Upstream, number>();
  /** Per workload: the pause before replacing a connection lost soon after it opened. */
  readonly #lossPause = new Map<string, number>();

  opened(client: Upstream): void {
    this.#openedAt.set(client, performance.now());
  }

  /** The pause before replacing `lost`, a connection to `workload` (0: at once). */
  afterLoss(workload: string, lost: Upstream): number {
    const lived = performance.now() - (this.#openedAt.get(lost) ?? 0);
    if (lived >= MAX_RESUME_MS) {
      this.#lossPause.delete(workload);
      return 0;
    }
    const pause = this.#lossPause.get(workload);
    this.#lossPause.set(workload, pause === undefined ? FIRST_RESUME_MS : Math.min(pause * 2, MAX_RESUME_MS));
    return pause ?? 0;
  }
}
