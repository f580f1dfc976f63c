/**
 * The forwarder's requests still waiting for their upstream's response head (forward.ts), each
 * cancelled when it waited the headers timeout, or when a graceful stop ends them all. Every
 * request gets the same time limit, so their deadlines come in the order the requests do: one
 * timer, set for the earliest deadline, serves them all (a timer per request, set and cleared,
 * cost more than the rest of this bookkeeping). A request that gets its head leaves the list at
 * once (a doubly linked list), so a long wait at its head keeps nothing else alive.
 */
import type { Cancellation } from "./upstream/cancellation.ts";

/**
 * The longest delay a timer takes: a longer one (MCPMGR_UPSTREAM_HEADERS_TIMEOUT of 25 days or
 * more) fires after 1 ms instead, and the timer, finding no deadline reached, would re-arm at
 * once, waking the process about every millisecond (and warning each time) while a request waits.
 * Capped, it wakes once in that time and re-arms for what is left.
 */
const maxTimerDelayMs = 2 ** 31 - 1;

/** One waiting request: its place in the list. */
export interface Waiting {
  readonly cancel: Cancellation;
  readonly deadline: number;
  prev: Waiting | undefined;
  next: Waiting | undefined;
  /** Still in the list. */
  listed: boolean;
}

export class WaitingRequests {
  readonly #timeoutMs: number;
  readonly #onTimeout: (cancel: Cancellation) => void;
  #first: Waiting | undefined;
  #last: Waiting | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(timeoutMs: number, onTimeout: (cancel: Cancellation) => void) {
    this.#timeoutMs = timeoutMs;
    this.#onTimeout = onTimeout;
  }

  /** `cancel`'s request starts waiting; pass what this returns to `remove` when it stops. */
  add(cancel: Cancellation): Waiting {
    const entry: Waiting = {
      cancel,
      deadline: performance.now() + this.#timeoutMs,
      prev: this.#last,
      next: undefined,
      listed: true,
    };
    if (this.#last === undefined) this.#first = entry;
    else this.#last.next = entry;
    this.#last = entry;
    // A timer still set for an earlier deadline fires first and moves on to this one.
    if (this.#timer === undefined) this.#arm(this.#timeoutMs);
    return entry;
  }

  remove(entry: Waiting): void {
    if (!entry.listed) return;
    entry.listed = false;
    if (entry.prev === undefined) this.#first = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next === undefined) this.#last = entry.prev;
    else entry.next.prev = entry.prev;
    entry.prev = undefined;
    entry.next = undefined;
  }

  /** Every waiting request's cancellation (a graceful stop), each once. */
  cancellations(): Cancellation[] {
    const all: Cancellation[] = [];
    for (let entry = this.#first; entry !== undefined; entry = entry.next) all.push(entry.cancel);
    return all;
  }

  #arm(delayMs: number): void {
    // Not what keeps the process alive: a waiting request has its connections for that.
    this.#timer = setTimeout(() => this.#expire(), Math.min(delayMs, maxTimerDelayMs));
    this.#timer.unref();
  }

  #expire(): void {
    this.#timer = undefined;
    const now = performance.now();
    const due: Cancellation[] = [];
    for (let entry = this.#first; entry !== undefined && entry.deadline <= now; entry = this.#first) {
      this.remove(entry);
      due.push(entry.cancel);
    }
    if (this.#first !== undefined) this.#arm(Math.max(1, this.#first.deadline - now));
    for (const cancel of due) this.#onTimeout(cancel);
  }
}
