/**
 * A cancellation for the byte lane: what the upstream client reads of an AbortSignal (aborted,
 * reason, one listener at a time) as a plain object. AbortController and its signal's listeners
 * cost more than everything else the lane does per request (measured: a fifth of its time);
 * the lane's requests need nothing else from them.
 */

/** What the upstream client and the forwarder read of a cancellation: an AbortSignal, or a Cancellation. */
export interface AbortLike {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

export class Cancellation implements AbortLike {
  aborted = false;
  reason: unknown = undefined;
  #listeners: (() => void)[] | undefined;

  /** Runs every listener once, with `reason` set; later calls do nothing. */
  abort(reason: unknown = new DOMException("This operation was aborted", "AbortError")): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners !== undefined) for (const listener of listeners) listener();
  }

  addEventListener(_type: "abort", listener: () => void): void {
    if (this.aborted) return;
    (this.#listeners ??= []).push(listener);
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    const listeners = this.#listeners;
    if (listeners === undefined) return;
    const at = listeners.indexOf(listener);
    if (at !== -1) listeners.splice(at, 1);
  }
}
