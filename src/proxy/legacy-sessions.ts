/**
 * Legacy HTTP+SSE (2024-11-05) sessions seen through the transparent forwarder. There the
 * session is named by the message URL the server announces in its stream's first event
 * (`/messages?sessionId=…`, or a path of its own): whoever knows that URL can POST into the
 * session, and the answers go to the stream's owner. So each announced URL is bound to the
 * caller that opened the stream, for as long as the stream is open, and a message POST is
 * checked against it before it is forwarded.
 *
 * A URL is compared by its path and the values of the query parameters the announced URL
 * carried (each must appear exactly once): reordering, adding parameters or re-encoding
 * does not make another session's URL look unknown.
 */
import type { SessionTracker } from "./session-tracker.ts";

interface AnnouncedPath {
  /** The query parameters that name the session at this path (sorted); none for path-named sessions. */
  readonly names: readonly string[];
  /** Open streams announcing this path. */
  streams: number;
}

export class LegacySessions {
  readonly #tracker: SessionTracker;
  readonly #paths = new Map<string, AnnouncedPath>();

  constructor(tracker: SessionTracker) {
    this.#tracker = tracker;
  }

  /** Whether any legacy stream is open (then message paths are checked). */
  get active(): boolean {
    return this.#paths.size > 0;
  }

  /**
   * A stream announced `endpoint` (an upstream URL) for `owner`; returns the function to call
   * when the stream ends.
   */
  announce(endpoint: URL, owner: string): () => void {
    let path = this.#paths.get(endpoint.pathname);
    // Every stream of one server names its sessions the same way.
    const names = path?.names ?? [...new Set(endpoint.searchParams.keys())].sort();
    const key = sessionKey(endpoint, names);
    if (key === undefined) return () => {};
    if (path === undefined) {
      path = { names, streams: 0 };
      this.#paths.set(endpoint.pathname, path);
    }
    path.streams++;
    // Over the session limit the stream still works; it is only counted (the GET was checked up front).
    this.#tracker.bind(key, owner, { pinned: true });
    let released = false;
    const announced = path;
    return () => {
      if (released) return;
      released = true;
      this.#tracker.forget(key);
      if (--announced.streams === 0 && this.#paths.get(endpoint.pathname) === announced)
        this.#paths.delete(endpoint.pathname);
    };
  }

  /**
   * Whose session the message URL `url` (an upstream URL) posts into: the owner; null for an
   * announced message path that names no open session (or names one ambiguously);
   * undefined when the path is no legacy message path.
   */
  ownerOf(url: URL): string | null | undefined {
    const path = this.#paths.get(url.pathname);
    if (path === undefined) return undefined;
    const key = sessionKey(url, path.names);
    if (key === undefined) return null;
    return this.#tracker.ownerOf(key) ?? null;
  }
}

/** Path and the session's parameters; undefined when one of them is missing or repeated. */
function sessionKey(url: URL, names: readonly string[]): string | undefined {
  let key = `legacy ${url.pathname}`;
  for (const name of names) {
    const values = url.searchParams.getAll(name);
    if (values.length !== 1) return undefined;
    key += `\n${name}=${values[0]}`;
  }
  return key;
}
