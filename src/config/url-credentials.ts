/**
 * A server's URL with credentials in it (`https://user:password@host/mcp`) is refused wherever
 * mcpmgr takes one: `run URL` (and so `run --from-config` and a registry entry's remote),
 * `proxy --target-uri` and `proxy stdio URL`. mcpmgr never sends a URL's user name or password
 * (its requests are built from the URL's origin, which has none), and the URL itself is shown by
 * `list`, `ps` and the logs. A header carries them instead, from the secrets store if need be.
 */
import { type ErrorCode, McpmgrError } from "../errors.ts";

const useAHeader =
  "leave them out of the URL and send a header: --remote-forward-headers Authorization='Basic <base64 of user:password>' in the foreground, or store that value with 'mcpmgr secret set NAME' and pass --remote-forward-headers-secret Authorization=NAME";

/** Throws when `url` carries a user name or password; `what` names the URL in the message (never its text). */
export function refuseUrlCredentials(url: URL, what: string, code: ErrorCode = "INVALID_ARGUMENT"): void {
  if (url.username === "" && url.password === "") return;
  throw new McpmgrError(
    code,
    `${what} holds a user name or password (user:password@): mcpmgr does not send them, and they would show in 'mcpmgr list', ps and logs`,
    { hint: useAHeader },
  );
}

/**
 * A URL as an error may quote it: whatever may be a user name or password left out (`https://…@host`),
 * and the query's values (withoutQueryValues).
 * A URL that parses loses what the parser would take for them (up to the authority's last "@"); one that
 * does not (a "/" or "#" typed in a password makes it so) loses everything up to its last "@", since
 * where its authority ends is anyone's guess.
 */
export function quotableUrl(text: string): string {
  const scheme = /^\s*[A-Za-z][\w+.-]*:\/\//.exec(text)?.[0];
  if (scheme === undefined) return withoutQueryValues(text);
  const rest = text.slice(scheme.length);
  const authorityEnd = URL.canParse(text) ? rest.search(/[/?#\\]/) : -1;
  const at = (authorityEnd === -1 ? rest : rest.slice(0, authorityEnd)).lastIndexOf("@");
  return withoutQueryValues(at === -1 ? text : `${scheme}…${rest.slice(at)}`);
}

/**
 * The query's values left out (`?api-key=…`): some services take a key there (an OTLP collector's
 * `?api-key=`, a signed URL's `sig=`), and a mistyped URL's error would quote it. The names stay, so
 * the user still sees which URL is meant. A mistyped URL need not have a path (`otlp.example?api-key=K`,
 * `host:4318?api-key=K`): any word before a "?" whose query has a value is taken for one (a text that
 * is no URL loses its "=…" values in the quote, nothing else).
 */
function withoutQueryValues(text: string): string {
  const query = /^[^\s?#]+\?(?=[^\s#]*=)/.exec(text);
  if (query === null) return text;
  const end = text.indexOf("#", query[0].length);
  const tail = end === -1 ? "" : text.slice(end);
  const params = text.slice(query[0].length, end === -1 ? undefined : end);
  return `${query[0]}${params.replace(/=[^&;]*/g, "=…")}${tail}`;
}
