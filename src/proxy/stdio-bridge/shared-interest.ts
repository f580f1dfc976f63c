/**
 * What the sessions want from the one server, combined: the most verbose log level any
 * session asked for (the bridge filters per session), and how many sessions subscribe
 * to each resource (the server hears one subscribe and one unsubscribe per URI).
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
