/**
 * The fetch the forwarder uses towards a remote MCP server, decorated with mcpmgr's own
 * credentials (ARCHITECTURE.md §3.2: decorators over fetch): injected headers, and a token from a
 * TokenSource (static bearer, OAuth, token exchange). A 401 from the remote invalidates the
 * token; a request whose body can be sent again is retried once with a fresh one. The
 * remote's own challenge never reaches the client: it is about mcpmgr's credentials, not
 * the client's, so the client gets a JSON-RPC error saying so.
 *
 * Credentials go to the MCP endpoint only (credential-scope.ts): a request for another path
 * on the remote is forwarded as the client sent it, without mcpmgr's token or injected
 * headers, and its 401 starts no login. A request carrying them never follows a redirect: the
 * 3xx answer is the caller's (the forwarder hands it to the client as it is; `proxy stdio`
 * reports it).
 */
import type { TokenSource } from "../auth/outgoing/token-source.ts";
import { credentialScope } from "./credential-scope.ts";
import type { Cancellation } from "./upstream/cancellation.ts";
import type { ConnectionPeer } from "./upstream/types.ts";
import { jsonRpcError } from "./jsonrpc.ts";
import { errorMessage } from "../errors.ts";

/**
 * Bun's fetch options (timeout, duplex, …) plus the client request being served, for token exchange, and
 * a Cancellation that mcpmgr's own client takes in place of `signal` (which must then follow it: fetch reads that).
 */
export type UpstreamInit = BunFetchRequestInit & {
  readonly timeout?: false | number;
  readonly incoming?: Request;
  readonly cancel?: Cancellation;
  /**
   * mcpmgr's own client asks this once a new connection for the request is open, before anything is
   * written on it, and closes the connection when it throws (the request fails with that error):
   * whoever holds the port at that moment is the one who answered the connection. Pooled connections
   * passed it when they opened. The gateway's check that a member's port is still its supervisor's
   * (gateway/member-send.ts). It is given the address and port the connection reached; fetch's own
   * connections (a request the client leaves to fetch) are asked before the request, without them.
   */
  readonly checkConnection?: (peer: ConnectionPeer | undefined) => void;
  /**
   * The process whose listener `checkConnection` admits connections for (a workload's supervisor): mcpmgr's own
   * client reuses a pooled connection only for the process it was admitted for. A supervisor killed and started
   * again listens on the same port, so the pooled connections to the dead one pass every other check.
   */
  readonly listenerPid?: number;
};

export type UpstreamFetch = (url: string, init: UpstreamInit) => Promise<Response>;

export interface AuthenticatedFetchOptions {
  /** The remote's MCP endpoint: the only place (with a legacy SSE message path it announces) credentials go. */
  readonly endpoint: URL;
  readonly headers: readonly { readonly name: string; readonly value: string }[];
  readonly source?: TokenSource;
  /** Where the token goes (default Authorization). */
  readonly headerName?: string;
}

function replayable(body: RequestInit["body"]): boolean {
  return (
    body === undefined ||
    body === null ||
    typeof body === "string" ||
    body instanceof Uint8Array ||
    body instanceof ArrayBuffer
  );
}

/** 401, or 403 with a Bearer insufficient_scope challenge (RFC 6750 §3.1: step-up). */
function refusesCredentials(response: Response): boolean {
  if (response.status === 401) return true;
  return response.status === 403 && /insufficient_scope/i.test(response.headers.get("www-authenticate") ?? "");
}

export function authenticatedFetch(base: UpstreamFetch, options: AuthenticatedFetchOptions): UpstreamFetch {
  const headerName = options.headerName ?? "authorization";
  const source = options.source;
  const scope = credentialScope(options.endpoint);
  return async (url, init) => {
    if (!scope.covers(url)) return base(url, init);
    // Never followed by fetch: a redirect would carry the credentials to a URL the scope did not check.
    const send = async (sendInit: UpstreamInit) =>
      scope.watch(url, sendInit.method ?? "GET", await base(url, { ...sendInit, redirect: "manual" }));
    const headers = new Headers(init.headers);
    for (const { name, value } of options.headers) headers.set(name, value);
    // A CORS preflight is not the client acting: it gets no credentials of mcpmgr's.
    if (source === undefined || init.method === "OPTIONS") return send({ ...init, headers });
    const credential = async (): Promise<string | undefined | Response> => {
      try {
        return await source.authorization(init.incoming);
      } catch (err) {
        // No credential (login timed out, exchange refused): the client learns why, the remote is not asked.
        return jsonRpcError(502, -32000, `mcpmgr has no credentials for the remote server: ${errorMessage(err)}`);
      }
    };
    let value = await credential();
    if (value instanceof Response) return value;
    if (value === undefined) headers.delete(headerName);
    else headers.set(headerName, value);
    let response = await send({ ...init, headers });
    if (!refusesCredentials(response)) return response;
    try {
      await source.invalidate(value, response);
    } catch (err) {
      await response.body?.cancel();
      return jsonRpcError(502, -32000, `mcpmgr could not authenticate to the remote server: ${errorMessage(err)}`);
    }
    if (replayable(init.body)) {
      await response.body?.cancel();
      value = await credential();
      if (value instanceof Response) return value;
      if (value === undefined) headers.delete(headerName);
      else headers.set(headerName, value);
      response = await send({ ...init, headers });
      if (!refusesCredentials(response)) return response;
      // Refused again: a reason the source gives (no login allowed now, and why) is the client's to read.
      const why = await source.invalidate(value, response).then(
        () => undefined,
        (err: unknown) => err,
      );
      if (why !== undefined) {
        await response.body?.cancel();
        return jsonRpcError(502, -32000, `mcpmgr could not authenticate to the remote server: ${errorMessage(why)}`);
      }
    }
    await response.body?.cancel();
    return jsonRpcError(502, -32000, "the remote MCP server refused mcpmgr's credentials (see the proxy's log)");
  };
}
