/**
 * A catalog connection's failures (catalog.ts), for the gateway's log: one short line per failure of a
 * member, the same failure at most once per FAILURE_REPEAT_MS (with how often it recurred meanwhile). A
 * member failing every retry with a large error page must not bury the gateway's log, and the SDK's own
 * wording of a refusal (a failed version negotiation) says nothing to the user, so the member's answer is
 * quoted instead.
 */
import { ProtocolError, SdkHttpError } from "@modelcontextprotocol/client";
import { errorMessage } from "../errors.ts";
import { excerpt } from "../printable.ts";

/** How much of a member's failure (an SDK error carries the member's whole HTTP error body) is logged. */
const FAILURE_EXCERPT_CHARS = 200;
/** The same failure of a member is logged again only after this long. */
const FAILURE_REPEAT_MS = 60_000;

/**
 * Why a member's own words are left out, in their place: said alike in the gateway's log and notices and
 * in the errors its clients get (member-words.ts).
 */
export const NOT_QUOTED = "not quoted: it may hold the workload's secrets";

/** The last failure logged for a member, when, and how often it recurred since without a line. */
export interface LoggedFailure {
  readonly why: string;
  readonly at: number;
  repeats: number;
}

/**
 * A member's failure for one log line: its HTTP status when it answered with an error, then an excerpt.
 * `quote` false (a member that holds secrets: membership.ts holdsSecrets): nothing of the member's own
 * words, which may quote its secrets (an error page printing the request's headers), and the gateway
 * does not know them to redact; its status or error code, and the gateway client's own errors, are given.
 */
export function failureText(err: unknown, quote = true): string {
  if (!quote && err instanceof SdkHttpError) return `HTTP ${err.status} (its answer is ${NOT_QUOTED})`;
  if (!quote && err instanceof ProtocolError) return `error ${err.code} (its message is ${NOT_QUOTED})`;
  if (err instanceof SdkHttpError && (err.status === 401 || err.status === 403)) return refusalText(err);
  const text = excerpt(errorMessage(err), FAILURE_EXCERPT_CHARS);
  return err instanceof SdkHttpError ? `HTTP ${err.status}: ${text}` : text;
}

/**
 * A member that refused the gateway: the SDK words it as a failed version negotiation (its first
 * request), which says nothing to the user; the member's own answer (a JSON-RPC error, say a
 * workload of a guarded group refusing a caller that is not its gateway) says why.
 */
function refusalText(err: SdkHttpError): string {
  const what = err.status === 401 ? "asked the gateway to authenticate" : "refused the gateway";
  const body = typeof err.data.text === "string" ? err.data.text : "";
  let why: unknown;
  try {
    why = (JSON.parse(body) as { error?: { message?: unknown } }).error?.message;
  } catch {
    why = undefined;
  }
  return typeof why === "string" && why !== ""
    ? `it ${what} (HTTP ${err.status}): ${excerpt(why, FAILURE_EXCERPT_CHARS)}`
    : `it ${what} (HTTP ${err.status})`;
}

/**
 * The line to log for failure `why` of a member whose last logged failure was `last`, or undefined when it
 * is the same failure within FAILURE_REPEAT_MS (then counted in `last`); `logged` is the new record to keep.
 */
export function failureLine(
  last: LoggedFailure | undefined,
  why: string,
  now: number,
): { line: string; logged: LoggedFailure } | undefined {
  if (last !== undefined && last.why === why && now - last.at < FAILURE_REPEAT_MS) {
    last.repeats++;
    return undefined;
  }
  const again = last !== undefined && last.why === why && last.repeats > 0 ? ` (${last.repeats + 1} times)` : "";
  return { line: `is unavailable${again}: ${why}; retrying`, logged: { why, at: now, repeats: 0 } };
}
