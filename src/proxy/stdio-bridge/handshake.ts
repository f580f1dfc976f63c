/**
 * How the bridge opens its one connection to the stdio server. It first probes with
 * `server/discover` (the 2026-07-28 way, which a modern server answers): a DiscoverResult
 * means the server is modern and every request is passed through as it is. Any other
 * answer, or none within a few seconds, means an older server: the bridge then makes the
 * one `initialize` handshake that server will see, and translates for modern clients. A
 * server reached over 2026-07-28 Streamable HTTP (`proxy stdio`) has no initialize to fall
 * back to: for it the probe is the whole handshake, and any other answer fails it.
 */
import type { JsonRpcMessage } from "../mcp-message.ts";
import { latestProtocolVersion } from "./messages.ts";
import { metaKey, modernProtocolVersion } from "./modern.ts";

export interface ServerInit {
  /** "modern": the server speaks 2026-07-28 itself; "legacy": it was initialised. */
  readonly era: "modern" | "legacy";
  /** Modern versions the server supports (empty for a legacy server). */
  readonly supportedVersions: readonly string[];
  readonly protocolVersion: string;
  readonly capabilities: Record<string, unknown>;
  readonly serverInfo: unknown;
  readonly instructions?: string;
}

export interface HandshakeIo {
  /** Sends a request and resolves with the server's answer (or never). */
  request(message: Omit<JsonRpcMessage, "id">): Promise<JsonRpcMessage>;
  notify(message: JsonRpcMessage): void;
  readonly closed: Promise<void>;
}

/** Servers that do not know server/discover may not answer it at all before initialize. */
const probeTimeoutMs = 5_000;
const bridgeCapabilities = { sampling: {}, elicitation: {}, roots: { listChanged: true } };

export async function handshake(
  io: HandshakeIo,
  clientInfo: { name: string; version: string },
  timeoutMs: number,
  initializeFallback = true,
): Promise<ServerInit> {
  const exited = io.closed.then(() => {
    throw new Error("the MCP server exited during initialize");
  });
  const probe = await Promise.race([
    io.request({
      jsonrpc: "2.0",
      method: "server/discover",
      params: {
        _meta: {
          [metaKey.protocolVersion]: modernProtocolVersion,
          [metaKey.clientCapabilities]: bridgeCapabilities,
          [metaKey.clientInfo]: clientInfo,
        },
      },
    }),
    // Without a fallback there is nothing to gain by giving up early.
    after(initializeFallback ? probeTimeoutMs : timeoutMs, () => undefined),
    exited,
  ]);
  const discovered = probe?.result as Record<string, unknown> | undefined;
  const versions = discovered?.supportedVersions;
  if (Array.isArray(versions) && versions.includes(modernProtocolVersion)) {
    const meta = discovered?._meta as Record<string, unknown> | undefined;
    return {
      era: "modern",
      supportedVersions: versions.filter((v): v is string => typeof v === "string" && v >= modernProtocolVersion),
      protocolVersion: modernProtocolVersion,
      capabilities: (discovered?.capabilities as Record<string, unknown>) ?? {},
      serverInfo: meta?.[metaKey.serverInfo] ?? { name: "unknown", version: "0" },
      ...(typeof discovered?.instructions === "string" ? { instructions: discovered.instructions } : {}),
    };
  }
  if (!initializeFallback) {
    const why = probe?.error?.message ?? (probe ? "no 2026-07-28 among its supported versions" : "no answer");
    throw new Error(`the MCP server did not answer server/discover as a 2026-07-28 server (${why})`);
  }
  // Generous: npx/uvx download the package before the server can answer.
  const answer = await Promise.race([
    io.request({
      jsonrpc: "2.0",
      method: "initialize",
      params: { protocolVersion: latestProtocolVersion, capabilities: bridgeCapabilities, clientInfo },
    }),
    after(timeoutMs, () => {
      throw new Error(`the MCP server did not answer initialize within ${Math.round(timeoutMs / 1000)} s`);
    }),
    exited,
  ]);
  if (answer.error) throw new Error(`the MCP server refused initialize: ${answer.error.message}`);
  io.notify({ jsonrpc: "2.0", method: "notifications/initialized" });
  const result = answer.result as Omit<ServerInit, "era" | "supportedVersions">;
  return { era: "legacy", supportedVersions: [], ...result };
}

/** A timer that does not keep the process alive on its own. */
function after<T>(ms: number, then: () => T): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      try {
        resolve(then());
      } catch (err) {
        reject(err);
      }
    }, ms);
    timer.unref?.();
  });
}
