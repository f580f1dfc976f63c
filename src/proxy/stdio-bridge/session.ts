/** One client's session on a shared stdio server (its requests the server works on are flights: flight.ts). */
import { randomUUID } from "node:crypto";
import type { LogLevel } from "./messages.ts";
import type { Sink } from "./sink.ts";

export interface ClientCapabilities {
  readonly sampling?: unknown;
  readonly elicitation?: unknown;
  readonly roots?: unknown;
}

export class ClientSession {
  readonly id: string;
  /** A 2026-07-28 request's own context (it has no session): lives as long as its POST. */
  readonly stateless: boolean;
  /**
   * The caller that opened the session (or sent the stateless request), "" without
   * authentication: only that caller may use it (bridge.getSession).
   */
  principal = "";
  protocolVersion = "2025-03-26";
  initialized = false;
  capabilities: ClientCapabilities = {};
  /** undefined: the client never asked for a level, so it gets every log message. */
  logLevel: LogLevel | undefined;
  readonly subscriptions = new Set<string>();
  /** The GET stream (streamable HTTP) or the SSE stream (legacy). */
  standalone: Sink | undefined;
  lastActivity = performance.now();
  /** A legacy SSE session lives as long as its stream: it never gives way to a new session. */
  pinned = false;
  /** Its requests the server is working on (legacy SSE caps them: each POST there returns at once). */
  inFlight = 0;
  ended = false;
  /** Sinks of this session's requests still waiting for a response, oldest first. */
  readonly openSinks = new Set<Sink>();
  readonly #onEnd: (() => void)[] = [];

  constructor(id: string, stateless = false) {
    this.id = id;
    this.stateless = stateless;
  }

  touch(): void {
    this.lastActivity = performance.now();
  }

  /** The newest stream that can carry a message not tied to one request. */
  bestSink(): Sink | undefined {
    let best: Sink | undefined;
    for (const sink of this.openSinks) if (sink.canStream) best = sink;
    if (best !== undefined) return best;
    return this.standalone?.canStream ? this.standalone : undefined;
  }

  onEnd(listener: () => void): void {
    this.#onEnd.push(listener);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const listener of this.#onEnd.splice(0)) listener();
  }
}

/** The context of one 2026-07-28 request; never listed among the bridge's sessions (session-table.ts). */
export function statelessSession(
  protocolVersion: string,
  capabilities: ClientSession["capabilities"],
  logLevel: LogLevel | undefined,
  principal: string,
): ClientSession {
  const session = new ClientSession(randomUUID(), true);
  session.initialized = true;
  session.protocolVersion = protocolVersion;
  session.capabilities = capabilities;
  session.logLevel = logLevel;
  session.principal = principal;
  return session;
}
