/**
 * A workload's log line (`notifications/message`) as the gateway's clients get it: its `logger` names
 * the workload that sent it (`<workload>`, or `<workload>/<logger>` when it named one). A client of the
 * gateway hears many workloads and the gateway itself on one connection; passed on as written, a
 * workload's line could name any logger, the gateway's own (`mcpmgr-gateway`, whose warnings say which
 * subscriptions ended) or another workload's, and be taken for theirs. Workload names never hold `/`,
 * so the part before the first `/` is always the sender. A workload named like the gateway's logger,
 * with no logger of its own, still gets the `/`, so nothing a workload sends reads as the gateway's.
 */
import { isObject } from "../objects.ts";

/** The logger of the gateway's own lines to its clients (session-subscriptions.ts). */
export const GATEWAY_LOGGER = "mcpmgr-gateway";

/** `params` of a workload's `notifications/message`, with its logger naming `workload`. */
export function attributedLog(workload: string, params: unknown): Record<string, unknown> {
  const given = isObject(params) ? params : {};
  const own = typeof given.logger === "string" && given.logger !== "" ? given.logger : undefined;
  const logger = own !== undefined ? `${workload}/${own}` : workload === GATEWAY_LOGGER ? `${workload}/` : workload;
  return { ...given, logger };
}
