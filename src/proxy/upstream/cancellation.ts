/**
 * A request's cancellation, cheaper than an AbortSignal on the forwarder's hot path: a new
 * AbortController and an `abort` listener on its signal (added, then removed) cost more per
 * forwarded request than parsing the answer's head. This client takes one in place of a signal
 * (`UpstreamInit.cancel`): the exchange under way is its one listener, a plain field.
 * `signal` makes a real AbortSignal only when something asks for one (fetch, where this client
 * does not apply; a connection being opened), aborted with the same reason.
 */
export class Cancellation {
  #aborted = false;
  #reason: unknown;
  #controller: AbortController | undefined;
  #listener: (() => void) | undefined;

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  /** An AbortSignal that follows this cancellation (made on first use). */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Cancels once; without a reason, with the AbortError an AbortController gives. */
  abort(reason?: unknown): void {
    if (this.#aborted) return;
    if (reason === undefined) {
      const controller = this.#controller ?? new AbortController();
      controller.abort();
      this.#controller = controller;
      reason = controller.signal.reason;
    }
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
    const listener = this.#listener;
    this.#listener = undefined;
    try {
      listener?.();
    } catch (err) {
      // As an AbortSignal's listener: reported, never thrown at whoever aborted (one timer aborts many).
      globalThis.reportError(err);
    }
  }

  /** `listener` is called once on abort (it replaces any other). */
  listen(listener: () => void): void {
    this.#listener = listener;
  }

  /** Removes `listener` if it is still the one. */
  unlisten(listener: () => void): void {
    if (this.#listener === listener) this.#listener = undefined;
  }
}
