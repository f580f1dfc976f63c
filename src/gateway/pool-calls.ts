/**
 * The gateway requests a session has in flight at its workloads, kept for two reasons (upstream-pool.ts):
 *  - by workload, in the order they were sent: a request or notification a workload sends back (sampling,
 *    a log line) belongs to the latest one, and travels on that request's response stream;
 *  - by connection, counted: a connection replaced while calls are in flight on it (only its event stream
 *    was lost) is ended once it has none (`quiet`), not under them.
 */
import type { Upstream } from "./upstream.ts";

export type RequestId = string | number;

export class PoolCalls {
  readonly #byWorkload = new Map<string, RequestId[]>();
  /** The requests in flight on each connection, and who waits for it to have none. */
  readonly #busy = new WeakMap<Upstream, { calls: number; quiet: (() => void)[] }>();

  /** Marks a gateway request as in flight on a workload's connection (`on`) until `release` is called. */
  track(workload: string, id: RequestId, on: Upstream): () => void {
    const list = this.#byWorkload.get(workload) ?? [];
    list.push(id);
    this.#byWorkload.set(workload, list);
    let busy = this.#busy.get(on);
    if (busy === undefined) {
      busy = { calls: 0, quiet: [] };
      this.#busy.set(on, busy);
    }
    const calls = busy;
    calls.calls++;
    let released = false;
    return () => {
      const at = list.indexOf(id);
      if (at !== -1) list.splice(at, 1);
      if (released) return;
      released = true;
      if (--calls.calls === 0) for (const quiet of calls.quiet.splice(0)) quiet();
    };
  }

  /** The latest gateway request in flight at `workload`, if any. */
  latest(workload: string): RequestId | undefined {
    return this.#byWorkload.get(workload)?.at(-1);
  }

  /** Once no gateway request is in flight on `client`, or `boundMs` has passed. */
  quiet(client: Upstream, boundMs: number): Promise<void> {
    const busy = this.#busy.get(client);
    if (busy === undefined || busy.calls === 0) return Promise.resolve();
    return new Promise((resolve) => {
      // Never what keeps the gateway running (its shutdown ends the connection itself, `close`).
      const timer = setTimeout(resolve, boundMs);
      timer.unref?.();
      busy.quiet.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
