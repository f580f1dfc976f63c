/**
 * The link an OAuth login opens the browser at, in place of the authorization URL.
 *
 * A command line is readable by every local user (`/proc/PID/cmdline`, `ps`): `xdg-open`'s, and a
 * browser started for the URL keeps it for its whole life. The authorization URL's `state` and
 * `code_challenge` are all another user needs to log in as themselves with mcpmgr's client and
 * hand the callback their own code, which mcpmgr would redeem (PKCE cannot tell: the challenge is
 * theirs too) and then act on their account. So the browser gets a one-time link to the callback
 * server: the first GET is redirected to the authorization URL, never shown on a command line.
 *
 * Whoever opens the link first gets that redirect, so one who reads the link and opens it before
 * the browser does still could: the link opened a second time (the browser, late) stops the login,
 * and an answer that arrives within HOLD_MS of the first opening waits for the rest of that time,
 * so a login made by a program in a split second cannot finish before the browser has opened the
 * link. A second, different answer before the code is redeemed stops the login too (the same
 * answer again is the user reloading the page that says it arrived). The login's timeout bounds
 * the answer's arrival, not this hold (oauth-callback.ts); no link opened (the browser skipped),
 * nothing is held.
 */
import { McpmgrError } from "../errors.ts";

/** How long after the link's first opening an answer waits for a second opening (a browser's start). */
export const HOLD_MS = 5_000;

export const page = (title: string, text: string) =>
  new Response(`<!doctype html><meta charset="utf-8"><title>${title}</title><p>${text}</p>`, {
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
  });

export interface LoginLink {
  /** The link's path on the callback server (random: a stale link of an earlier login leads nowhere). */
  readonly path: string;
  /** Where the link leads, once the authorization URL is known (until then it is not found). */
  point(url: URL): void;
  /** The answer to a request for the link. */
  answer(req: Request): Response;
  /** Passes the authorization server's answer on (`settle`) once it may be trusted to be the browser's. */
  accept(url: URL, settle: (url: URL) => void): void;
}

export function loginLink(stop: (err: McpmgrError) => void, holdMs = HOLD_MS): LoginLink {
  const path = `/login/${Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString("base64url")}`;
  let target: URL | undefined;
  let openedAt: number | undefined;
  /** The first answer's query (its code and state, or its error). */
  let answered: string | undefined;
  const tampered = (what: string) =>
    stop(
      new McpmgrError(
        "AUTH_SETUP_FAILED",
        `the OAuth login was stopped: ${what}, so another program on this machine may have read its link`,
        {
          hint: "log in again; on a machine shared with other users, add --remote-auth-skip-browser and paste the printed URL into the browser yourself",
        },
      ),
    );
  return {
    path,
    point(url) {
      target = url;
    },
    answer(req) {
      if (target === undefined) return new Response("Not Found", { status: 404 });
      if (req.method !== "GET") return new Response("Method Not Allowed", { status: 405, headers: { allow: "GET" } });
      if (openedAt === undefined) {
        openedAt = performance.now();
        return new Response(null, { status: 302, headers: { location: target.href, "cache-control": "no-store" } });
      }
      tampered("its one-time link was opened twice");
      return page("mcpmgr", "This login link was opened before, by another program: mcpmgr stopped the login.");
    },
    accept(url, settle) {
      // The same answer again is the browser's page reloaded (or restored), not another program's:
      // one that logged in itself has a code of its own.
      if (url.search === answered) return;
      if (answered !== undefined) return tampered("the authorization server's answer arrived twice");
      answered = url.search;
      const wait = openedAt === undefined ? 0 : openedAt + holdMs - performance.now();
      if (wait <= 0) return settle(url);
      setTimeout(() => settle(url), wait);
    },
  };
}
