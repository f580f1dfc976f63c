/**
 * A session's subscribe answered on a connection that is replaced (upstream-pool.ts `carry`) is told its
 * outcome only once the URI is subscribed on the connection that serves the session from then on. When it
 * fails there, that failure is the subscribe's answer (not `{}` and a warning: nothing follows the URI):
 *  - `notTaken` builds that answer, with the member's own code when it answered an error, invalid params
 *    when its acknowledgement left the URI out (a refusal), and an internal error when it failed to answer
 *    (a 404 of the new session too, a timeout, the connection lost): a passing failure, not the client's mistake;
 *  - `AwaitedRenewals` keeps the subscribes that wait for a new connection's own re-subscription (their
 *    connection, whose event stream never opened, was replaced for them), for its failures to reach them.
 */
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import type { Dropped } from "./member-subscriptions.ts";
import type { SessionSubscriptions } from "./session-subscriptions.ts";

/** Why a carried subscribe failed, and the failure itself when one did (none: left out of an acknowledgement). */
export interface CarriedFailure {
  readonly why: string;
  readonly cause: unknown;
}

export class AwaitedRenewals {
  /** Per workload and URI: how many subscribes wait, and the failure the re-subscription met, if any. */
  readonly #byWorkload = new Map<string, Map<string, { waiting: number; failed?: CarriedFailure }>>();

  /** Runs `wait` while a subscribe of `uri` waits for `workload`'s re-subscription: the failure met, if any. */
  async during(workload: string, uri: string, wait: () => Promise<unknown>): Promise<CarriedFailure | undefined> {
    const byUri = this.#byWorkload.get(workload) ?? new Map<string, { waiting: number; failed?: CarriedFailure }>();
    this.#byWorkload.set(workload, byUri);
    const awaited = byUri.get(uri) ?? { waiting: 0 };
    byUri.set(uri, awaited);
    awaited.waiting++;
    try {
      await wait();
    } finally {
      if (--awaited.waiting === 0) byUri.delete(uri);
      if (byUri.size === 0) this.#byWorkload.delete(workload);
    }
    return awaited.failed;
  }

  /** A re-subscription failed `uri`: kept for the subscribes waiting for it; false when none waits. */
  failed(workload: string, uri: string, failure: CarriedFailure): boolean {
    const awaited = this.#byWorkload.get(workload)?.get(uri);
    if (awaited === undefined) return false;
    awaited.failed = failure;
    return true;
  }

  /**
   * What a new connection's re-subscription at `workload` reports the URIs it failed to: the session is told
   * in a warning, but a URI a subscribe waits for is forgotten quietly, its failure kept for that subscribe.
   */
  report(workload: string, subscriptions: SessionSubscriptions): Dropped {
    return (lost, why, cause) => {
      const others: string[] = [];
      for (const uri of lost)
        if (this.failed(workload, uri, { why, cause })) subscriptions.refused(workload, uri);
        else others.push(uri);
      if (others.length > 0) subscriptions.dropped(workload, others, why);
    };
  }
}

/** A carried subscribe's failure, as its answer. */
export function notTaken(workload: string, uri: string, failed: CarriedFailure): ProtocolError {
  return new ProtocolError(
    carriedCode(failed.cause),
    `workload '${workload}' did not take the subscription to ${JSON.stringify(uri)}: ${failed.why}`,
    { workload },
  );
}

function carriedCode(cause: unknown): number {
  if (cause instanceof ProtocolError) return cause.code;
  return cause === undefined ? ProtocolErrorCode.InvalidParams : ProtocolErrorCode.InternalError;
}
