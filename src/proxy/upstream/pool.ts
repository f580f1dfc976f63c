/**
 * Keep-alive connections to one origin. Idle connections are reused most recent first
 * (the one least likely to have been closed by the upstream meanwhile), at most
 * `maxIdle` are kept, and each is closed after `idleTimeoutMs` without use, or earlier
 * when the upstream announced a shorter `Keep-Alive: timeout`, so that we close an idle
 * connection before the upstream does (a request racing the upstream's close fails).
 * There is no bound on connections in use: each one serves a request of a client of ours.
 */
import { type ConnectionLimits, type ConnectionOwner, type ConnectTarget, Http1Connection } from "./connection.ts";

export interface PoolOptions {
  readonly maxIdle: number;
  readonly idleTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly limits: ConnectionLimits;
}

const sweepIntervalMs = 1_000;

export class OriginPool implements ConnectionOwner<Http1Connection> {
  readonly target: ConnectTarget;
  readonly #options: PoolOptions;
  readonly #idle: Http1Connection[] = [];
  #sweeper: ReturnType<typeof setInterval> | undefined;

  constructor(target: ConnectTarget, options: PoolOptions) {
    this.target = target;
    this.#options = options;
  }

  get idleCount(): number {
    return this.#idle.length;
  }

  /**
   * An idle keep-alive connection, if there is one; for a request that names the listener's process
   * (`listenerPid`), only one admitted for that process. One admitted for another reached a listener that is
   * gone (a supervisor killed and started again on the same port): its peer's close may not have been seen
   * yet, and a request written on it would be lost. It is closed.
   */
  takeIdle(listenerPid?: number): Http1Connection | undefined {
    const idle = this.#idle;
    while (idle.length > 0) {
      const connection = idle.pop() as Http1Connection;
      if (connection.closed) continue;
      if (connection.listenerPid === listenerPid) return connection;
      connection.destroy();
    }
    return undefined;
  }

  connect(signal: AbortSignal | undefined): Promise<Http1Connection> {
    return Http1Connection.open(this, this.target, this.#options.limits, {
      timeoutMs: this.#options.connectTimeoutMs,
      signal,
    });
  }

  release(connection: Http1Connection): void {
    if (connection.closed) return;
    if (this.#idle.length >= this.#options.maxIdle) {
      connection.destroy();
      return;
    }
    connection.idleSince = performance.now();
    // An idle connection must not keep the process alive (a stopped proxy exits at once).
    connection.unref();
    this.#idle.push(connection);
    if (this.#sweeper === undefined) {
      this.#sweeper = setInterval(() => this.#sweep(), sweepIntervalMs);
      this.#sweeper.unref();
    }
  }

  forget(connection: Http1Connection): void {
    const at = this.#idle.lastIndexOf(connection);
    if (at !== -1) this.#idle.splice(at, 1);
  }

  /** Closes every idle connection. */
  close(): void {
    for (const connection of this.#idle.splice(0)) connection.destroy();
    this.#stopSweeper();
  }

  #sweep(): void {
    const now = performance.now();
    for (const connection of [...this.#idle]) {
      if (now - connection.idleSince >= this.#idleLimit(connection)) connection.destroy();
    }
    if (this.#idle.length === 0) this.#stopSweeper();
  }

  #idleLimit(connection: Http1Connection): number {
    const announced = connection.upstreamIdleMs;
    if (announced === undefined) return this.#options.idleTimeoutMs;
    // A second of margin against the upstream's own timer (half when the timeout is that short).
    const beforeUpstream = announced > 2_000 ? announced - 1_000 : announced / 2;
    return Math.min(this.#options.idleTimeoutMs, beforeUpstream);
  }

  #stopSweeper(): void {
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }
}
