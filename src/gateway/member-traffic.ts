/**
 * Where what a workload sends on one of a gateway session's connections goes (its requests, log lines
 * and resource updates): to that session's client only, tied to the gateway request in flight on the
 * connection (the latest, when several are), so they travel on that request's response stream. A log
 * line names its workload in its logger (member-log.ts). A 2026-07-28 caller's pool has no peer: a log
 * line goes back on its request's own stream, and a workload's requests are refused (such a caller
 * takes none). Which connection is current and which updates are strays is the pool's to say
 * (upstream-pool.ts); this module only routes.
 */
import type { ClientCapabilities, JSONRPCNotification, JSONRPCRequest } from "@modelcontextprotocol/client";
import { attributedLog } from "./member-log.ts";
import type { RequestId } from "./pool-calls.ts";
import { requestLogRelay } from "./upstream.ts";

export interface PoolPeer {
  /** What the gateway's client can answer (sampling, elicitation, roots), mirrored upstream. */
  capabilities(): ClientCapabilities;
  /** Forwards a workload's request to the gateway client, tied to a gateway request when one is in flight. */
  request(
    request: JSONRPCRequest,
    related: RequestId | undefined,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>>;
  notify(notification: JSONRPCNotification, related: RequestId | undefined): void;
}

/** What the pool knows about one connection to `workload` that routing needs. */
export interface ConnectionState {
  /** The gateway request the workload's messages belong with (the latest in flight there), if any. */
  related(): RequestId | undefined;
  /** Whether a resource update from this connection is passed on (a current connection's, a URI followed). */
  takesUpdate(uri: unknown): boolean;
}

/** The capabilities and handlers a connection to `workload` is opened with (upstream.ts `connectUpstream`). */
export function memberTraffic(
  workload: string,
  peer: PoolPeer | undefined,
  connection: ConnectionState,
): {
  capabilities: ClientCapabilities;
  onRequest: (request: JSONRPCRequest, signal: AbortSignal) => Promise<Record<string, unknown>>;
  onNotification: (notification: JSONRPCNotification) => void;
} {
  return {
    capabilities: peer ? mirrored(peer.capabilities()) : {},
    onRequest: (request, signal) => {
      if (peer === undefined) throw new Error(`the gateway client cannot answer ${request.method} requests`);
      return peer.request(request, connection.related(), signal);
    },
    onNotification: (notification) => {
      // A 2026-07-28 caller's pool: a log line on a request's own stream goes back on that request's.
      if (peer === undefined) {
        if (notification.method === "notifications/message")
          requestLogRelay()?.({ ...notification, params: attributedLog(workload, notification.params) });
        return;
      }
      // A log line names its workload in its logger, never the gateway or another workload (member-log.ts).
      if (notification.method === "notifications/message")
        peer.notify(
          { ...notification, params: attributedLog(workload, notification.params) as never },
          connection.related(),
        );
      if (notification.method === "notifications/resources/updated" && connection.takesUpdate(notification.params?.uri))
        peer.notify(notification, connection.related());
    },
  };
}

/** Only what a workload may ask its client for; the rest is between the gateway and its client. */
export function mirrored(capabilities: ClientCapabilities): ClientCapabilities {
  const out: ClientCapabilities = {};
  if (capabilities.sampling) out.sampling = capabilities.sampling;
  if (capabilities.elicitation) out.elicitation = capabilities.elicitation;
  if (capabilities.roots) out.roots = capabilities.roots;
  return out;
}
