/**
 * A connection being opened: settles once, when the socket opens, fails, takes longer than
 * the connect timeout, or the request that wanted it is aborted. Giving up (timeout, abort)
 * runs `giveUp` so that the connection closes its socket, or refuses it when it opens later.
 */
import { UpstreamError } from "./errors.ts";
import type { ConnectTarget } from "./types.ts";

export interface ConnectOptions {
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
}

export class ConnectAttempt {
  readonly promise: Promise<void>;
  #resolve!: () => void;
  #reject!: (err: unknown) => void;
  #settled = false;
  readonly #timer: ReturnType<typeof setTimeout>;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort: () => void;

  constructor(target: ConnectTarget, options: ConnectOptions, giveUp: () => void) {
    this.promise = new Promise<void>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    const abandon = (err: unknown) => {
      if (this.#settled) return;
      this.reject(err);
      giveUp();
    };
    this.#signal = options.signal;
    this.#onAbort = () => abandon(options.signal?.reason);
    this.#timer = setTimeout(
      () =>
        abandon(
          new UpstreamError(
            "UPSTREAM_CONNECT_TIMEOUT",
            `no connection to ${target.unix ?? `${target.hostname}:${target.port}`} within ${options.timeoutMs} ms`,
          ),
        ),
      options.timeoutMs,
    );
    this.#signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  get settled(): boolean {
    return this.#settled;
  }

  resolve(): void {
    if (this.#done()) this.#resolve();
  }

  reject(err: unknown): void {
    if (this.#done()) this.#reject(err);
  }

  #done(): boolean {
    if (this.#settled) return false;
    this.#settled = true;
    clearTimeout(this.#timer);
    this.#signal?.removeEventListener("abort", this.#onAbort);
    return true;
  }
}
