/**
 * Long-lived streams currently open to clients, and the graceful-stop protocol they share.
 * A stream is either request-scoped (the SSE answer of one POST: it ends once its responses
 * are out) or standalone (a GET or legacy SSE stream that never "finishes"). Graceful
 * shutdown (serve.ts) lets ordinary requests and request-scoped streams finish within its
 * bound; then it calls closeAll(reason): the `beforeClose` hooks run first (a front end
 * answers what it still owes, e.g. the bridge ends each pending request with a JSON-RPC
 * error), then every stream's closer gets the reason, so a request-scoped stream can write
 * an error event for each answer it still awaited before it closes. Any front end (the
 * bridge, the transparent forwarder) plugs in by registering its streams and hooks here.
 */
export interface LiveStreamOptions {
  /** The SSE answer of one request: graceful stop waits for it (within its bound). */
  readonly requestScoped?: boolean;
}

export class LiveStreams {
  readonly #closers = new Map<(reason: string) => void, boolean>();
  readonly #beforeClose: ((reason: string) => void)[] = [];

  /** Registers a stream; returns the function that unregisters it. */
  add(close: (reason: string) => void, options: LiveStreamOptions = {}): () => void {
    this.#closers.set(close, options.requestScoped === true);
    return () => this.#closers.delete(close);
  }

  /** Streams graceful stop does not wait for (standalone ones). */
  get size(): number {
    let count = 0;
    for (const requestScoped of this.#closers.values()) if (!requestScoped) count++;
    return count;
  }

  /** Called with the reason when closeAll starts, before any stream is closed. */
  beforeClose(hook: (reason: string) => void): void {
    this.#beforeClose.push(hook);
  }

  closeAll(reason = "the server is shutting down"): void {
    for (const hook of this.#beforeClose.splice(0)) {
      try {
        hook(reason);
      } catch {
        // One front end's failure must not keep the others' streams open.
      }
    }
    for (const close of [...this.#closers.keys()]) close(reason);
    this.#closers.clear();
  }
}
