/**
 * Where mcpmgr's own credentials for a remote may go: the MCP endpoint it was given, and the
 * message path a legacy SSE stream from that endpoint announced (2024-11-05: the `endpoint`
 * event). Any other path on the remote — an admin API, a health check — is the remote's
 * business, not the MCP server's, and gets no token and no injected header from mcpmgr.
 * The decision is per request URL, before anything is attached.
 */
import { endpointEventRewriter } from "./sse-endpoint.ts";

/** A remote announcing more message paths than this is not a plausible MCP server: later ones are ignored. */
const maxAnnouncedPaths = 16;

export interface CredentialScope {
  /** Whether a request to this URL may carry mcpmgr's credentials. */
  covers(url: string): boolean;
  /**
   * A response from the MCP endpoint: a legacy SSE stream's `endpoint` event adds its message
   * path to the scope. Returns the response to use (the same bytes, watched on their way).
   */
  watch(url: string, method: string, response: Response): Response;
}

/** Paths compare without trailing slashes ("/mcp" and "/mcp/" are one endpoint); dot segments are already resolved by URL. */
function normalisedPath(path: string): string {
  return path.replace(/\/+$/, "") || "/";
}

export function credentialScope(endpoint: URL): CredentialScope {
  const endpointPath = normalisedPath(endpoint.pathname);
  const announced = new Set<string>();
  const parse = (url: string): URL | undefined => (URL.canParse(url) ? new URL(url) : undefined);
  return {
    covers(url) {
      const parsed = parse(url);
      if (parsed === undefined || parsed.origin !== endpoint.origin) return false;
      const path = normalisedPath(parsed.pathname);
      return path === endpointPath || announced.has(path);
    },
    watch(url, method, response) {
      const parsed = parse(url);
      if (
        method !== "GET" ||
        response.body === null ||
        parsed === undefined ||
        normalisedPath(parsed.pathname) !== endpointPath ||
        !(response.headers.get("content-type") ?? "").startsWith("text/event-stream")
      )
        return response;
      const head = endpointEventRewriter((data) => {
        const messages = URL.canParse(data, parsed.href) ? new URL(data, parsed) : undefined;
        if (messages?.origin === endpoint.origin && announced.size < maxAnnouncedPaths)
          announced.add(normalisedPath(messages.pathname));
        return data;
      });
      let decided = false;
      const watched = response.body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            if (decided) return controller.enqueue(chunk);
            const out = head.push(chunk);
            if (out === undefined) return;
            decided = true;
            controller.enqueue(out);
          },
          flush(controller) {
            if (!decided) controller.enqueue(head.flush());
          },
        }),
      );
      return new Response(watched, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    },
  };
}
