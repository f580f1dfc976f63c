/**
 * Which step-up logins a remote may start (RFC 6750 `403 insufficient_scope`, MCP step-up), so
 * that a remote naming a new scope in each refusal cannot open one login (a browser tab) after
 * another (review 12, F16). One policy per remote (token source), shared by its grants:
 *
 * - the scopes it names must be scope tokens (RFC 6749 §3.3) of at most 128 characters, at most
 *   MAX_NEW_SCOPES new ones at a time and MAX_SCOPES added by step-ups in all (the scopes asked at
 *   the start, the user's or the remote's `scopes_supported`, however many, are not counted);
 * - at most MAX_STEP_UP_LOGINS step-up logins per STEP_UP_WINDOW_MS (one at a time is the grant
 *   session's single flight);
 * - a background (detached) workload starts none: nobody is there to log in, and a login page
 *   appearing out of nowhere is what a phisher wants. It is deferred instead: remembered with
 *   the grant, so that the user's next `mcpmgr restart` logs in for those scopes while `restart`
 *   shows the URL, as the first login of a background workload is done at its start.
 *
 * A refusal is an McpmgrError: the client's request gets it as a 502 JSON-RPC error.
 */
import { McpmgrError } from "../../errors.ts";

export const MAX_STEP_UP_LOGINS = 3;
export const STEP_UP_WINDOW_MS = 10 * 60_000;
export const MAX_NEW_SCOPES = 8;
export const MAX_SCOPES = 32;
/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ); bounded in length. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/;

export interface StepUpPolicyOptions {
  readonly now: () => number;
  /**
   * Set for a background workload: no step-up login is started; the text says how the user
   * logs in for the scopes (e.g. "run `mcpmgr restart NAME`").
   */
  readonly deferTo?: string | undefined;
}

export interface StepUpPolicy {
  /**
   * Whether a step-up from `current` to `current ∪ wanted` may log in now: "login" (counted),
   * "defer" (a background workload: remember the scopes for the next start); else throws.
   * `initial`: the scopes the session started with, which the bound on scopes in all leaves out.
   */
  admit(current: readonly string[], wanted: readonly string[], initial?: readonly string[]): "login" | "defer";
  /** How the user logs in for deferred scopes (deferTo). */
  readonly deferTo: string | undefined;
}

const refused = (message: string, hint: string) => new McpmgrError("AUTH_SETUP_FAILED", message, { hint });

export function stepUpPolicy(options: StepUpPolicyOptions): StepUpPolicy {
  const started: number[] = [];
  return {
    deferTo: options.deferTo,
    admit(current, wanted, initial = []) {
      const unusable = wanted.find((scope) => !SCOPE_TOKEN.test(scope));
      if (unusable !== undefined)
        throw refused(
          `the remote server asked for more scopes, naming one that is not a valid OAuth scope (${JSON.stringify(unusable.slice(0, 40))}); no login was started`,
          "the remote server's 403 insufficient_scope challenge is malformed; give the scopes it needs with --remote-auth-scopes",
        );
      const added = wanted.filter((scope) => !current.includes(scope));
      // What step-ups added: a remote listing 40 scopes in its metadata has not piled them up.
      const stepped = [...current, ...added].filter((scope) => !initial.includes(scope));
      if (added.length > MAX_NEW_SCOPES || stepped.length > MAX_SCOPES)
        throw refused(
          `the remote server asked for ${added.length} more scopes (at most ${MAX_NEW_SCOPES} at a time and ${MAX_SCOPES} more in all); no login was started`,
          "give the scopes it needs with --remote-auth-scopes",
        );
      if (options.deferTo !== undefined) return "defer";
      const now = options.now();
      while (started.length > 0 && now - (started[0] as number) >= STEP_UP_WINDOW_MS) started.shift();
      if (started.length >= MAX_STEP_UP_LOGINS) {
        const waitS = Math.ceil((STEP_UP_WINDOW_MS - (now - (started[0] as number))) / 1000);
        throw refused(
          `the remote server asked for more scopes (${added.join(" ")}) again, after ${MAX_STEP_UP_LOGINS} logins for more scopes in ${STEP_UP_WINDOW_MS / 60_000} minutes; no login was started (the next is allowed in ${waitS} s)`,
          "a remote asking for a new scope at each request may be trying to open login pages; give the scopes it needs with --remote-auth-scopes",
        );
      }
      started.push(now);
      return "login";
    },
  };
}
