/**
 * A workload's log line (`notifications/message`) as the gateway's clients get it: its `logger` names
 * the workload that sent it (`<workload>`, or `<workload>/<logger>` when it named one). A client of the
 * gateway hears many workloads and the gateway itself on one connection; passed on as written, a
 * workload's line could name any logger, the gateway's own (`mcpmgr-gateway`, whose warnings say which
 * subscriptions ended) or another workload's, and be taken for theirs. Workload names never hold `/`,
 * so the part before the first `/` is always the sender. A workload named like the gateway's logger,
 * with no logger of its own, still gets the `/`, so nothing a workload sends reads as the gateway's.
 * The workload's logger is escaped and cut short (`printable`, `excerpt`), so that its text cannot move
 * the cursor or start a new line after the workload's name.
 */
import { isObject } from "../objects.ts";
import { excerpt, printable } from "../printable.ts";

/**
 * The most of a workload's own logger name kept. A logger names a part of a server ("db",
 * "http.server"); a longer one is a line of text passed off as a name.
 */
export const MAX_MEMBER_LOGGER_CHARS = 128;

/** The logger of the gateway's own lines to its clients (session-subscriptions.ts). */
export const GATEWAY_LOGGER = "mcpmgr-gateway";

/** `params` of a workload's `notifications/message`, with its logger naming `workload`. */
export function attributedLog(workload: string, params: unknown): Record<string, unknown> {
  const given = isObject(params) ? params : {};
  // Shown as written but for what acts on a terminal or a log line instead of showing: a carriage
  // return, an escape sequence or a line break after `notes/` would let the line read as the gateway's.
  const own =
    typeof given.logger === "string" && given.logger !== ""
      ? excerpt(printable(given.logger), MAX_MEMBER_LOGGER_CHARS)
      : undefined;
  const logger = own !== undefined ? `${workload}/${own}` : workload === GATEWAY_LOGGER ? `${workload}/` : workload;
  return { ...given, logger };
}
