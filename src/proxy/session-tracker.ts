/**
 * What the transparent proxy knows about upstream sessions: which ones have ended
 * (DELETEd, or reported unknown by the upstream). A request for an ended session gets
 * 404 + JSON-RPC -32001 at once, the answer that makes MCP clients re-initialise.
 * Bounded, so a client cycling session ids cannot grow it without limit.
 */
export class SessionTracker {
  readonly #ended = new Set<string>();
  readonly #capacity: number;

  constructor(capacity = 10_000) {
    this.#capacity = capacity;
  }

  markEnded(sessionId: string): void {
    if (this.#ended.size >= this.#capacity) {
      const oldest = this.#ended.values().next().value;
      if (oldest !== undefined) this.#ended.delete(oldest);
    }
    this.#ended.add(sessionId);
  }

  hasEnded(sessionId: string): boolean {
    return this.#ended.has(sessionId);
  }
}
