/**
 * Long-lived streams currently open to clients. Graceful shutdown lets ordinary
 * requests finish first and then closes these, so a client sees its SSE stream end
 * cleanly (and reconnects elsewhere) instead of the socket being cut.
 */
export class LiveStreams {
  readonly #closers = new Set<() => void>();

  /** Registers a stream; returns the function that unregisters it. */
  add(close: () => void): () => void {
    this.#closers.add(close);
    return () => this.#closers.delete(close);
  }

  get size(): number {
    return this.#closers.size;
  }

  closeAll(): void {
    for (const close of [...this.#closers]) close();
    this.#closers.clear();
  }
}
