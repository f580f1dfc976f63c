/**
 * What the sessions want from the one server, combined: the most verbose log level any
 * session asked for (the bridge filters per session), and how many sessions subscribe
 * to each resource (the server hears one subscribe and one unsubscribe per URI). The
 * bridge keeps them in a ServerInterest, which tells the server when they change.
 */
import { logLevelRank, type LogLevel } from "./messages.ts";
import type { ClientSession } from "./session.ts";

export function mostVerboseLevel(sessions: Iterable<ClientSession>): LogLevel | undefined {
  let best: LogLevel | undefined;
  for (const session of sessions) {
    if (session.logLevel !== undefined && (best === undefined || logLevelRank(session.logLevel) < logLevelRank(best)))
      best = session.logLevel;
  }
  return best;
}

export class SubscriberCounts {
  readonly #counts = new Map<string, number>();

  /** Counts one more subscriber; true when it is the first. */
  add(uri: string): boolean {
    const count = this.#counts.get(uri) ?? 0;
    this.#counts.set(uri, count + 1);
    return count === 0;
  }

  /** Counts one fewer; true when it was the last. */
  remove(uri: string): boolean {
    const left = (this.#counts.get(uri) ?? 1) - 1;
    if (left > 0) {
      this.#counts.set(uri, left);
      return false;
    }
    this.#counts.delete(uri);
    return true;
  }
}

/**
 * The interest the server was told of (bridge.ts): subscribers per resource and the level it was
 * last asked to log at. `tell` sends the server a request of the bridge's own, whose answer
 * nobody waits for.
 */
export class ServerInterest {
  readonly subscribers = new SubscriberCounts();
  /** The level the server was last asked to log at (undefined: never asked). */
  logLevel: LogLevel | undefined;
  readonly #tell: (method: string, params: Record<string, unknown>) => void;

  constructor(tell: (method: string, params: Record<string, unknown>) => void) {
    this.#tell = tell;
  }

  /** One more subscriber of `uri` (a listen the bridge serves): the server hears of the first. */
  subscribe(uri: string): void {
    if (this.subscribers.add(uri)) this.#tell("resources/subscribe", { uri });
  }

  /** Drops a subscription; forwards the unsubscribe when it was the last. */
  unsubscribe(uri: string, sendToServer = true): boolean {
    const last = this.subscribers.remove(uri);
    if (last && sendToServer) this.#tell("resources/unsubscribe", { uri });
    return last;
  }

  /** A client wants `level`: the server is asked for it unless it already logs at least as verbosely. */
  raiseLogLevel(level: LogLevel): void {
    if (this.logLevel !== undefined && logLevelRank(level) >= logLevelRank(this.logLevel)) return;
    this.logLevel = level;
    this.#tell("logging/setLevel", { level });
  }

  /** The sessions' wishes changed (one that asked for a level ended): the most verbose still wanted. */
  syncLogLevel(sessions: Iterable<ClientSession>): void {
    const wanted = mostVerboseLevel(sessions);
    if (wanted === undefined || wanted === this.logLevel) return;
    this.logLevel = wanted;
    this.#tell("logging/setLevel", { level: wanted });
  }
}
