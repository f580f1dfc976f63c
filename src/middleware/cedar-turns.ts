/**
 * Fair turns for the Cedar evaluator (cedar-evaluator.ts): it has one thread for every workload's
 * questions, so each connection's frames wait in a queue of their own, and the connections with
 * work take turns, round-robin, one slice of time each (a long batch is decided a slice at a time
 * and goes on at its next turn). One client flooding slow questions thus delays another's question
 * by about one slice per busy connection, not by its whole backlog. Between turns the event loop
 * runs: frames that came meanwhile are read and queued. A frame that finds nobody waiting takes its
 * first slice at once. What one question may cost is bounded apart (cedar-cost.ts): a slice ends
 * after the question that crosses it.
 */

/** How long one turn may last before the next connection's. */
export const SLICE_MS = 10;

/**
 * One frame's work: does some of it, at least one piece, stopping once `until` (performance.now())
 * has passed; true when the frame is done.
 */
export type Job = (until: number) => boolean;

/** Told when a job throws: its owner's frames are already forgotten, the other connections go on. */
export type Fault = (owner: object, error: unknown) => void;

export class Turns {
  readonly #queues = new Map<object, Job[]>();
  /** Connections with work, in the order of their next turn. */
  #order: object[] = [];
  #scheduled = false;
  #running = false;
  readonly #sliceMs: number;
  readonly #onFault: Fault;

  constructor(sliceMs = SLICE_MS, onFault: Fault = () => {}) {
    this.#sliceMs = sliceMs;
    this.#onFault = onFault;
  }

  /** How many of `owner`'s frames wait (the one being decided included). */
  waiting(owner: object): number {
    return this.#queues.get(owner)?.length ?? 0;
  }

  add(owner: object, job: Job): void {
    // Nobody else waits: its first slice is taken now, without a turn of the event loop (a round
    // trip's worth of latency for the common single question).
    const now = this.#order.length === 0 && !this.#running;
    const queue = this.#queues.get(owner);
    if (queue !== undefined) queue.push(job);
    else {
      this.#queues.set(owner, [job]);
      this.#order.push(owner);
    }
    if (now) this.#turn();
    else this.#schedule();
  }

  /** Forgets `owner`'s frames (its connection closed). */
  drop(owner: object): void {
    if (!this.#queues.delete(owner)) return;
    this.#order = this.#order.filter((o) => o !== owner);
  }

  #schedule(): void {
    if (this.#scheduled || this.#order.length === 0) return;
    this.#scheduled = true;
    // setImmediate, not a microtask: the sockets are read between turns.
    setImmediate(() => {
      this.#scheduled = false;
      this.#turn();
    });
  }

  #turn(): void {
    const owner = this.#order.shift();
    const queue = owner === undefined ? undefined : this.#queues.get(owner);
    const job = queue?.[0];
    if (owner !== undefined && queue !== undefined && job !== undefined) {
      this.#running = true;
      let done: boolean;
      try {
        done = job(performance.now() + this.#sliceMs);
      } catch (error) {
        // A fault in one connection's frame (a bug of ours: every known failure is answered inside
        // the job) ends that connection's work, not the one thread every workload's questions share.
        this.drop(owner);
        this.#onFault(owner, error);
        this.#schedule();
        return;
      } finally {
        this.#running = false;
      }
      // The job may have dropped its own owner (its connection was cut off).
      if (this.#queues.get(owner) === queue) {
        if (done) queue.shift();
        if (queue.length > 0) this.#order.push(owner);
        else this.#queues.delete(owner);
      }
    }
    this.#schedule();
  }
}
