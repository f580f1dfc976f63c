/**
 * Which logins a remote may make mcpmgr start once a workload runs, so that a remote cannot open
 * one login (a browser tab, and with it a registration) after another (review 12, F16). Three
 * kinds of request come from the remote, not the user: a step-up (RFC 6750 `403
 * insufficient_scope`, MCP step-up), a move to another authorization server (its RFC 9728
 * metadata names a new one) and a first login asked for only after the start (its first
 * `401`). One policy per remote (token source), shared by all its grants and all three kinds:
 *
 * - one interactive login at a time (`serial`), whatever started it;
 * - at most MAX_REMOTE_LOGINS logins the remote started per REMOTE_LOGIN_WINDOW_MS, counted
 *   before anything is sent to the authorization server (a registration with a new server
 *   counts as the login it leads to): the remote cannot make mcpmgr register endlessly either;
 * - a step-up's scopes must be scope tokens (RFC 6749 §3.3) of at most 128 characters, at most
 *   MAX_NEW_SCOPES new ones at a time and MAX_SCOPES added by step-ups in all (the scopes asked at
 *   the start, the user's or the remote's `scopes_supported`, however many, are not counted);
 * - a background (detached) workload starts none: nobody is there to log in, and a login page
 *   appearing out of nowhere is what a phisher wants. Its logins happen at its start, while
 *   `run`/`start`/`restart` shows the URL; the client is told so (`deferTo`), and a step-up's
 *   scopes are remembered with the grant for that next start.
 *
 * A refusal is a LoginRefused (an McpmgrError): the client's request gets it as a 502 JSON-RPC error.
 */
import { McpmgrError } from "../../errors.ts";

export const MAX_REMOTE_LOGINS = 3;
export const REMOTE_LOGIN_WINDOW_MS = 10 * 60_000;
export const MAX_NEW_SCOPES = 8;
export const MAX_SCOPES = 32;
/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ); bounded in length. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/;

/** A login the policy did not let the remote start (refused, or deferred to the next start). */
export class LoginRefused extends McpmgrError {
  constructor(message: string, hint: string) {
    super("AUTH_SETUP_FAILED", message, { hint });
  }
}

export interface LoginPolicyOptions {
  readonly now: () => number;
  /**
   * Set for a background workload: no login is started after the start; the text says how the
   * user logs in instead (e.g. "run `mcpmgr restart NAME` …").
   */
  readonly deferTo?: string | undefined;
}

export interface LoginPolicy {
  /**
   * Whether a step-up from `current` to `current ∪ wanted` may log in now: "login" (counted),
   * "defer" (a background workload: remember the scopes for the next start); else throws.
   * `initial`: the scopes the session started with, which the bound on scopes in all leaves out.
   */
  admit(current: readonly string[], wanted: readonly string[], initial?: readonly string[]): "login" | "defer";
  /**
   * A login (and the registration before it) the remote asked for after the start, other than a
   * step-up: `what` says why ("the remote server now names … as its authorization server").
   * Counted when allowed; throws LoginRefused past the budget, and always for a background workload.
   */
  admitLogin(what: string): void;
  /** Runs one interactive login of the remote's, after the one in progress. */
  serial<T>(login: () => Promise<T>): Promise<T>;
  /** How the user logs in for deferred scopes and servers (deferTo). */
  readonly deferTo: string | undefined;
}

const BUDGET_HINT =
  "a remote that keeps asking for logins may be trying to open login pages; restart the workload when you want to log in";

export function loginPolicy(options: LoginPolicyOptions): LoginPolicy {
  const started: number[] = [];
  let queue: Promise<unknown> = Promise.resolve();
  /** undefined: a login may start now (counted); else the text saying when the next may. */
  const spent = (): string | undefined => {
    const now = options.now();
    while (started.length > 0 && now - (started[0] as number) >= REMOTE_LOGIN_WINDOW_MS) started.shift();
    if (started.length < MAX_REMOTE_LOGINS) {
      started.push(now);
      return undefined;
    }
    const waitS = Math.ceil((REMOTE_LOGIN_WINDOW_MS - (now - (started[0] as number))) / 1000);
    return `after ${MAX_REMOTE_LOGINS} logins the remote server started in ${REMOTE_LOGIN_WINDOW_MS / 60_000} minutes; no login was started (the next is allowed in ${waitS} s)`;
  };
  return {
    deferTo: options.deferTo,
    admit(current, wanted, initial = []) {
      const unusable = wanted.find((scope) => !SCOPE_TOKEN.test(scope));
      if (unusable !== undefined)
        throw new LoginRefused(
          `the remote server asked for more scopes, naming one that is not a valid OAuth scope (${JSON.stringify(unusable.slice(0, 40))}); no login was started`,
          "the remote server's 403 insufficient_scope challenge is malformed; give the scopes it needs with --remote-auth-scopes",
        );
      const added = wanted.filter((scope) => !current.includes(scope));
      // What step-ups added: a remote listing 40 scopes in its metadata has not piled them up.
      const stepped = [...current, ...added].filter((scope) => !initial.includes(scope));
      if (added.length > MAX_NEW_SCOPES || stepped.length > MAX_SCOPES)
        throw new LoginRefused(
          `the remote server asked for ${added.length} more scopes (at most ${MAX_NEW_SCOPES} at a time and ${MAX_SCOPES} more in all); no login was started`,
          "give the scopes it needs with --remote-auth-scopes",
        );
      if (options.deferTo !== undefined) return "defer";
      const refusal = spent();
      if (refusal !== undefined)
        throw new LoginRefused(
          `the remote server asked for more scopes (${added.join(" ")}) again, ${refusal}`,
          "a remote asking for a new scope at each request may be trying to open login pages; give the scopes it needs with --remote-auth-scopes",
        );
      return "login";
    },
    admitLogin(what) {
      if (options.deferTo !== undefined)
        throw new LoginRefused(
          `${what}, and a background workload does not start a login by itself: ${options.deferTo}`,
          "a login is started only while you watch: at the workload's start",
        );
      const refusal = spent();
      if (refusal !== undefined) throw new LoginRefused(`${what} again, ${refusal}`, BUDGET_HINT);
    },
    serial(login) {
      const run = queue.then(login, login);
      queue = run.catch(() => {});
      return run;
    },
  };
}
