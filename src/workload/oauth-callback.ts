/**
 * The interactive part of `--remote-auth`: the local callback server the authorization server
 * redirects to, and the login URL shown on stderr (found there by `run` in a supervisor's
 * log) and opened in the browser the CLI provides. Logins are serialised across mcpmgr
 * processes by a lock on the callback port, which they share. Everything else — discovery,
 * registration, the checks of the redirect, token upkeep — is auth/outgoing. The browser is
 * opened at a one-time link, never at the authorization URL (login-link.ts says why).
 */
import { homedir } from "node:os";
import { join } from "node:path";
import { browserLogin, type InteractiveLogin, redirectUriFor } from "../auth/outgoing/login.ts";
import type { OAuthSpec } from "../config/outgoing-auth-spec.ts";
import { McpmgrError } from "../errors.ts";
import { serve } from "../proxy/serve.ts";
import { ensureDir } from "../state/atomic-file.ts";
import { withLock } from "../state/lock.ts";
import { assertPrivateFolders } from "../state/private-dirs.ts";
import type { Env, WorkloadContext } from "./context.ts";
import { loginLink, page } from "./login-link.ts";

/** The line `run` looks for in a supervisor's log to show the user where to log in. */
export const LOGIN_URL_MARKER = "Authorize mcpmgr at:";

/**
 * Per user and machine-wide (not per MCPMGR_HOME: the port is the machine's), outside the shared
 * /tmp. It is refused (STATE_UNSAFE) where another user could reach it, as mcpmgr's own folders
 * are (XDG_RUNTIME_DIR naming a shared folder): they could hold its locks (no login, no refresh)
 * or break them (two logins on one port, two refreshes of one rotating token).
 */
export function oauthLockDir(env: Env): string {
  const dir = join(env.XDG_RUNTIME_DIR || join(homedir(), ".cache"), "mcpmgr");
  assertPrivateFolders([dir], LOCK_DIR_CONSEQUENCE);
  return dir;
}

const LOCK_DIR_CONSEQUENCE = "they could hold or break its OAuth login and token refresh locks";

/**
 * The lock folder as a login or a refresh is about to use it: made if missing, and checked again
 * then. The check at a workload's start sees only what is there: a folder missing then (no login
 * or refresh yet) could be made by another user before the first refresh, hours later, or between
 * the check and the mkdir, which takes a folder that is already there.
 */
export async function readyOAuthLockDir(env: Env): Promise<string> {
  const dir = oauthLockDir(env);
  await ensureDir(dir);
  assertPrivateFolders([dir], LOCK_DIR_CONSEQUENCE);
  return dir;
}

/** The callback server; a busy port names the option that moves it. */
function serveCallback(
  port: number,
  options: Omit<Parameters<typeof serve>[0], "host" | "port">,
): ReturnType<typeof serve> {
  try {
    return serve({ host: "127.0.0.1", port, ...options });
  } catch (err) {
    if (err instanceof McpmgrError && err.code === "PORT_IN_USE") {
      throw new McpmgrError(
        "PORT_IN_USE",
        `the OAuth callback port ${port} on 127.0.0.1 is in use by another program`,
        { hint: "choose another with --remote-auth-callback-port (the client's redirect URI must allow it)" },
      );
    }
    throw err;
  }
}

/** One login: callback server up, URL shown, wait for the redirect (or the timeout), then auth/outgoing checks and redeems it. */
export function callbackLogin(spec: OAuthSpec, ctx: WorkloadContext, signal?: AbortSignal): InteractiveLogin {
  return async (request) => {
    const lockDir = await readyOAuthLockDir(ctx.env);
    // Another mcpmgr logging in holds the port: wait for it rather than fail or steal its callback.
    return withLock(
      join(lockDir, `oauth-callback-${spec.callbackPort}.lock`),
      async () => {
        let expected: string | undefined;
        // An answer came within the timeout: the login link's hold (at most its 5 s) may finish past it.
        let answeredInTime = false;
        let settle!: (url: URL) => void;
        let stop!: (err: McpmgrError) => void;
        const arrived = new Promise<URL>((resolve, reject) => {
          settle = resolve;
          stop = reject;
        });
        // Stopped after the login ended another way (timeout, cancel): nobody waits for it any more.
        arrived.catch(() => {});
        const link = loginLink((err) => stop(err));
        const callback = serveCallback(spec.callbackPort, {
          handler: (req) => {
            const url = new URL(req.url);
            if (url.pathname === link.path) return link.answer(req);
            if (url.pathname !== "/callback") return new Response("Not Found", { status: 404 });
            // Someone else's (or a stale) redirect: not ours, and not an answer.
            if (expected === undefined || url.searchParams.get("state") !== expected)
              return page("mcpmgr", "This login link is not the one mcpmgr is waiting for.");
            answeredInTime = true;
            link.accept(url, settle);
            // What the answer says (success, refusal) is decided after its issuer is checked: the terminal tells.
            return page("mcpmgr", "mcpmgr received the authorization server's answer. You can close this window.");
          },
        });
        try {
          return await browserLogin(request, {
            redirectUri: redirectUriFor(spec.callbackPort),
            show(url) {
              ctx.log.info(LOGIN_URL_MARKER);
              // On its own line, so it can be copied (and found by `run` in a supervisor's log).
              ctx.stderr(`${url.href}\n`);
              link.point(url);
              // The one-time link, never the URL itself: a command line is every local user's to read.
              if (!spec.skipBrowser) ctx.openBrowser(new URL(link.path, callback.url).href);
            },
            async receive(state) {
              expected = state;
              let timer: ReturnType<typeof setTimeout> | undefined;
              let giveUp: (() => void) | undefined;
              // The start given up (the workload stopped while the user has not logged in yet): no more waiting.
              const cancelled = new Promise<never>((_, reject) => {
                giveUp = () => reject(signal?.reason);
                if (signal?.aborted) giveUp();
                else signal?.addEventListener("abort", giveUp, { once: true });
              });
              // The timeout bounds the user's answer, not the hold after it (login-link.ts): a login answered
              // in time never fails for being held, which a timeout under the hold's 5 s would make every one do.
              const timeout = new Promise<never>((_, reject) => {
                timer = setTimeout(
                  () =>
                    answeredInTime ||
                    reject(
                      new McpmgrError(
                        "AUTH_SETUP_FAILED",
                        `the OAuth login did not complete within ${Math.round(spec.timeoutMs / 1000)} s`,
                        { hint: "open the printed URL sooner, or give more time with --remote-auth-timeout (e.g. 2m)" },
                      ),
                    ),
                  spec.timeoutMs,
                );
              });
              return Promise.race([arrived, timeout, cancelled]).finally(() => {
                clearTimeout(timer);
                if (giveUp) signal?.removeEventListener("abort", giveUp);
              });
            },
          });
        } finally {
          await callback.shutdown();
        }
      },
      // A holder that died is detected by its pid; a live one may wait for its user for long.
      { timeoutMs: spec.timeoutMs + 60_000, staleMs: 24 * 3_600_000 },
    ).catch((err: unknown) => {
      if (err instanceof McpmgrError && err.code === "STATE_LOCKED") {
        throw new McpmgrError("AUTH_SETUP_FAILED", `another mcpmgr login is using callback port ${spec.callbackPort}`, {
          hint: "finish that login first, or give this one another --remote-auth-callback-port",
        });
      }
      throw err;
    });
  };
}
