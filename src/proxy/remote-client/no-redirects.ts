/**
 * `proxy stdio` never follows a redirect of the remote. fetch would follow one on its own and
 * send the request again, headers included, to wherever the remote points: mcpmgr's bearer
 * token and injected headers to another path of the same origin (outside the MCP endpoint the
 * credential scope allows), its injected headers to another origin (fetch drops only
 * Authorization there). Every request of the relay asks for the redirect itself
 * (`redirect: "manual"`), and a redirect answer becomes an error naming where it pointed: the
 * user decides whether that address is the MCP endpoint and gives it.
 */
import { McpmgrError } from "../../errors.ts";
import type { UpstreamFetch } from "../authenticated-fetch.ts";

/** The statuses fetch follows (RFC 9110 §15.4; 300 and 304 are not followed). */
const followed: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

export function refuseRedirects(base: UpstreamFetch): UpstreamFetch {
  return async (url, init) => {
    const response = await base(url, { ...init, redirect: "manual" });
    if (!followed.has(response.status)) return response;
    await response.body?.cancel().catch(() => {});
    const location = response.headers.get("location");
    const to = location !== null && URL.canParse(location, url) ? new URL(location, url).href : undefined;
    throw new McpmgrError(
      "REMOTE_REDIRECT",
      `the remote MCP server answered ${init.method ?? "GET"} ${new URL(url).pathname} with a redirect (HTTP ${response.status}${to ? ` to ${to}` : ""}); mcpmgr does not follow redirects`,
      { hint: to ? `if ${to} is the MCP endpoint, give that URL instead` : "give the MCP endpoint's own URL" },
    );
  };
}
