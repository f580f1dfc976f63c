/**
 * A 2025-era MCP session opened over raw HTTP (`fetch`, not the SDK's transport), for tests that
 * look at what crosses the wire: `initialize`, then `notifications/initialized`, then POSTs that
 * carry the session's id and revision.
 */

/** The Content-Type and Accept of a JSON-RPC POST to a streamable-HTTP endpoint. */
export const JSON_RPC_POST_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};

/** POSTs a 2025-06-18 `initialize` (id 1) from the client `clientName` to `url`: the first request of a session. */
export function postInitialize(url: string, clientName: string): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: JSON_RPC_POST_HEADERS,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: clientName, version: "1" } },
    }),
  });
}

/** postInitialize's answer read whole: its status and text (a success, or the error mcpmgr gave instead). */
export async function initializeAnswer(url: string, clientName: string): Promise<{ status: number; text: string }> {
  const response = await postInitialize(url, clientName);
  return { status: response.status, text: await response.text() };
}

export interface RawSession {
  readonly sessionId: string;
  /** POSTs `body` (JSON text) in the session; `headers` replace the session's own of the same name. */
  post(
    body: string,
    options?: { readonly signal?: AbortSignal; readonly headers?: Record<string, string> },
  ): Promise<Response>;
}

/** Opens a session at `url` in `protocolVersion`, as the client `clientName`. */
export async function openRawSession(url: string, protocolVersion: string, clientName: string): Promise<RawSession> {
  const opened = await fetch(url, {
    method: "POST",
    headers: JSON_RPC_POST_HEADERS,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion, capabilities: {}, clientInfo: { name: clientName, version: "1" } },
    }),
  });
  await opened.text();
  const sessionId = opened.headers.get("mcp-session-id");
  if (sessionId === null) throw new Error(`${url} opened no session (HTTP ${opened.status})`);
  const session: RawSession = {
    sessionId,
    post: (body, options = {}) =>
      fetch(url, {
        method: "POST",
        headers: {
          ...JSON_RPC_POST_HEADERS,
          "mcp-session-id": sessionId,
          "mcp-protocol-version": protocolVersion,
          ...options.headers,
        },
        body,
        ...(options.signal ? { signal: options.signal } : {}),
      }),
  };
  await (await session.post(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }))).text();
  return session;
}

/** Every JSON-RPC message of an answer: the one of a JSON body, each `data:` line of an event stream. */
export async function answerMessages(response: Response): Promise<Record<string, unknown>[]> {
  const text = await response.text();
  if (!(response.headers.get("content-type") ?? "").includes("text/event-stream"))
    return text ? [JSON.parse(text)] : [];
  return text
    .split("\n")
    .filter((line) => line.startsWith("data:") && line.slice(5).trim() !== "")
    .map((line) => JSON.parse(line.slice(5)));
}
