/**
 * Whether a workload its supervisor calls running answers MCP through its proxy: the last step of
 * `run`'s and `start`'s wait (workload/supervisor-control.ts).
 */
import { errorMessage, McpmgrError } from "../errors.ts";
import type { UpstreamFetch } from "../proxy/authenticated-fetch.ts";
import { localListenerClient } from "../proxy/upstream/local-client.ts";
import { clientUrl } from "../state/workload-url.ts";
import type { WorkloadStore } from "../state/workloads.ts";
import { version } from "../version.ts";
import { liveWorkload, liveWorkloadFetch } from "./live-workload.ts";

/**
 * "Running" is the supervisor's word; an MCP request through the proxy answered with a result
 * is the client's. Both eras count: a 2025-era `initialize`, else (a server that speaks only
 * MCP 2026-07-28 has no initialize) a 2026-07-28 `server/discover`. Remote workloads are
 * exempt: their server may want credentials first.
 */
export async function confirmAnswers(store: WorkloadStore, name: string, failureHint: string): Promise<void> {
  const record = await store.getExisting(name);
  if (record.runtime === "remote") return;
  const url = clientUrl(record.host, record.proxyPort, record.proxyPath);
  if (record.proxyPath === "/sse") return; // legacy SSE has no one-request handshake to probe
  // mcpmgr's own probe: in a group a gateway with policies guards, only the gateway key gets an answer.
  // Loaded here: `list` evaluates this module and must stay light (the guard module writes files).
  const { readGatewayKey } = await import("../state/gateway-guard.ts");
  const gatewayKey = readGatewayKey(store.paths);
  const authorization: Record<string, string> = gatewayKey ? { authorization: `Bearer ${gatewayKey}` } : {};
  try {
    // The probe carries the gateway key: it goes only to the supervisor's own listener, never to whoever
    // took the port of a supervisor that died a moment ago (nor through an http_proxy of the environment).
    const send = liveWorkloadFetch(await liveWorkload(store, name), localListenerClient().fetch);
    const legacy = await probe(send, url, authorization, "2025-06-18", {
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "mcpmgr-readiness", version } },
    });
    if (legacy.answered) {
      if (legacy.session)
        await send(legacy.at, { method: "DELETE", headers: { "mcp-session-id": legacy.session, ...authorization } })
          .then((response) => response.body?.cancel())
          .catch(() => {});
      return;
    }
    const modern = await probe(send, url, authorization, "2026-07-28", {
      method: "server/discover",
      params: {
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientInfo": { name: "mcpmgr-readiness", version },
          "io.modelcontextprotocol/clientCapabilities": {},
        },
      },
    });
    if (!modern.answered)
      throw new Error(`initialize answered ${legacy.status}, server/discover answered ${modern.status}`);
  } catch (err) {
    throw new McpmgrError(
      "SERVER_FAILED",
      `${name} runs but does not answer MCP (initialize or server/discover) at ${url}: ${errorMessage(err)}`,
      { hint: failureHint },
    );
  }
}

/**
 * One request of the readiness probe: answered when it gets a result, or the proxy's own bearer
 * challenge (a protected endpoint answering, as intended); `at`, the endpoint that answered.
 */
async function probe(
  send: UpstreamFetch,
  url: string,
  authorization: Record<string, string>,
  protocolVersion: string,
  request: { method: string; params: Record<string, unknown> },
): Promise<{ answered: boolean; status: number; at: string; session?: string }> {
  const signal = AbortSignal.timeout(30_000);
  let target = url;
  let response: Response;
  for (let hops = 0; ; hops++) {
    response = await send(target, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": protocolVersion,
        "mcp-method": request.method,
        ...authorization,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, ...request }),
      signal,
    });
    const next = hops < MAX_REDIRECTS ? sameOriginRedirect(response, target) : undefined;
    if (next === undefined) break;
    await response.body?.cancel().catch(() => {});
    target = next;
  }
  const status = response.status;
  if (status === 401 && /^Bearer\b/i.test(response.headers.get("www-authenticate") ?? "")) {
    await response.body?.cancel().catch(() => {});
    return { answered: true, status, at: target };
  }
  const session = response.headers.get("mcp-session-id") ?? undefined;
  const text = await response.text();
  return { answered: response.ok && text.includes('"result"'), status, at: target, ...(session ? { session } : {}) };
}

/** Redirects of the endpoint followed, at most: a loop is an endpoint that does not answer. */
const MAX_REDIRECTS = 5;

/**
 * Where a redirect that keeps the method and body (307, 308) sends the probe, when that is the same
 * listener: a server mounted at /mcp/ by a framework that redirects /mcp there, which MCP clients (fetch)
 * follow. `send` never follows one itself (the probe carries the gateway key); one to another origin is
 * not followed, and the endpoint does not answer MCP.
 */
function sameOriginRedirect(response: Response, from: string): string | undefined {
  if (response.status !== 307 && response.status !== 308) return undefined;
  const location = response.headers.get("location");
  if (location === null) return undefined;
  try {
    const to = new URL(location, from);
    return to.origin === new URL(from).origin ? to.href : undefined;
  } catch {
    return undefined;
  }
}
