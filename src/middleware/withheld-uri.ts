/**
 * What the gateway's records keep of a resource URI while its data is withheld (membership.ts
 * `SecretHolders.withhold`: a member holds secrets the gateway cannot redact): its audit lines
 * (audit.ts), its spans' `mcp.resource.uri` (telemetry.ts) and its own log lines quoting a member's URIs
 * (gateway/merged-view.ts). A server may put its key in a resource's URI
 * (`https://api.example.com/data?key=…`, `db://user:password@host/x`) and a client read that URI back;
 * the gateway never learns the key, so it cannot redact it. What such URIs carry credentials in is their
 * userinfo, query and fragment: those are written as `[withheld]`, and the scheme, host, port and path,
 * which say what was read, are kept. Applied to every resource URI of the group, not only to the
 * holder's: a URI is read before any member is chosen for it (a template's, a contested or a refused one
 * has no owner then), and a client may send a key it learned from the holder to any URI.
 */

/** RFC 3986 appendix B: scheme, authority, path, query, fragment (every string matches). */
const uriParts = /^([A-Za-z][A-Za-z0-9+.-]*:)?(\/\/[^/?#]*)?([^?#]*)(\?[^#]*)?(#.*)?$/s;

export const WITHHELD_PART = "[withheld]";

/** A resource URI without its userinfo, query and fragment; each one it had is written as `[withheld]`. */
export function bareUri(uri: string): string {
  const parts = uriParts.exec(uri);
  if (parts === null) return WITHHELD_PART;
  const [, scheme = "", authority = "", path = "", query, fragment] = parts;
  // The userinfo ends at the authority's last `@` (a password may hold `@` raw, though it should not).
  const at = authority.lastIndexOf("@");
  const host = at === -1 ? authority : `//${WITHHELD_PART}@${authority.slice(at + 1)}`;
  return `${scheme}${host}${path}${query !== undefined ? `?${WITHHELD_PART}` : ""}${fragment !== undefined ? `#${WITHHELD_PART}` : ""}`;
}

/**
 * A JSON string literal (Cedar quotes a resource's spellings: `(as Resource::"https://…?key=…")`), or a
 * bare `scheme://…` up to a space or a quote.
 */
const quotedOrUri = /"(?:[^"\\]|\\.)*"|[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s"]+/g;
const hasScheme = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/** A denial's reason with the URIs it quotes made bare, as `bareUri` makes a target. */
export function bareUrisIn(reason: string): string {
  return reason.replace(quotedOrUri, (found) => {
    if (!found.startsWith('"')) return bareUri(found);
    let text: unknown;
    try {
      text = JSON.parse(found);
    } catch {
      return found;
    }
    return typeof text === "string" && hasScheme.test(text) ? JSON.stringify(bareUri(text)) : found;
  });
}
