/**
 * A 2025-era stdio client (initialize, then a session) in front of a remote that speaks only
 * MCP 2026-07-28. The stdio bridge already serves 2025-era sessions in front of a 2026-07-28
 * server (stdio-bridge/modern-server-sessions.ts): initialize answered from server/discover;
 * the session's protocol version, client info, capabilities and log level added to each
 * request as `_meta`; an InputRequiredResult asked of the client as its own
 * sampling/elicitation/roots requests and the call retried with `inputResponses` and the
 * remote's `requestState`; list changes and the resource updates the client subscribed to
 * taken from the bridge's own `subscriptions/listen` streams; ping, logging/setLevel and
 * resources/subscribe answered by the bridge. Here that bridge serves one session, the stdio
 * client, and its server is the remote behind a StatelessChannel, so the translation is the
 * bridge's, not a second one.
 */
import { version } from "../../version.ts";
import type { UpstreamFetch } from "../authenticated-fetch.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import { StdioBridge } from "../stdio-bridge/bridge.ts";
import { modernProtocolVersion } from "../stdio-bridge/modern.ts";
import type { ClientSession } from "../stdio-bridge/session.ts";
import type { Sink } from "../stdio-bridge/sink.ts";
import { StatelessChannel } from "./stateless-channel.ts";
import { errorMessage } from "../../errors.ts";

export interface LegacyClientOptions {
  readonly url: URL;
  readonly fetch: UpstreamFetch;
  /** A message for the stdio client. */
  readonly deliver: (message: JsonRpcMessage) => void;
  readonly warn: (text: string) => void;
  /** The client's initialize: the remote hears of the client by its clientInfo. */
  readonly initialize: JsonRpcMessage;
  /** How long the remote may take to answer server/discover. */
  readonly discoverTimeoutMs?: number;
}

export interface LegacyClientTranslation {
  /** A message from the stdio client (the initialize included). */
  handle(message: JsonRpcMessage): void;
  /** The client's requests still waiting for an answer. */
  readonly pending: number;
  close(): void;
}

function clientInfoOf(initialize: JsonRpcMessage): { name: string; version: string } {
  const info = initialize.params?.clientInfo as { name?: unknown; version?: unknown } | undefined;
  return typeof info?.name === "string" && typeof info.version === "string"
    ? { name: info.name, version: info.version }
    : { name: "mcpmgr", version };
}

/** Starts translating for the client, or says why the remote is not a 2026-07-28 server. */
export async function translateForLegacyClient(
  options: LegacyClientOptions,
): Promise<LegacyClientTranslation | { readonly refused: string }> {
  const channel = new StatelessChannel({
    url: options.url,
    fetch: options.fetch,
    warn: options.warn,
    version: modernProtocolVersion,
  });
  const bridge = new StdioBridge({
    clientInfo: clientInfoOf(options.initialize),
    modernServerOnly: true,
    handshakeTimeoutMs: options.discoverTimeoutMs ?? 30_000,
    // One session for as long as the client runs; it cancels what it no longer waits for.
    sessionIdleMs: Number.POSITIVE_INFINITY,
    requestTimeoutMs: Number.POSITIVE_INFINITY,
    onLog: (_level, text) => options.warn(text),
  });
  channel.onMessage = bridge.onServerMessage;
  try {
    await bridge.start(channel);
  } catch (err) {
    bridge.close("the remote is not a 2026-07-28 server");
    channel.close();
    return { refused: errorMessage(err) };
  }
  const session: ClientSession = bridge.createSession();
  // stdout takes every message, and is the one stream the session has.
  const stdout: Sink = {
    send: (message) => {
      options.deliver(message);
      return true;
    },
    canStream: true,
  };
  session.standalone = stdout;
  return {
    handle: (message) => void bridge.handle(session, message, stdout),
    get pending() {
      return bridge.inFlightCount;
    },
    close: () => {
      bridge.close("mcpmgr proxy stdio is stopping");
      channel.close();
    },
  };
}
