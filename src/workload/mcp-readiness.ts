/**
 * Whether a workload its supervisor calls running answers MCP through its proxy: the last step of
 * `run`'s and `start`'s wait (workload/supervisor-control.ts).
 */
import { isIP } from "node:net";
import { errorMessage, isMcpmgrError, McpmgrError } from "../errors.ts";
import { excerpt, printable } from "../printable.ts";
import type { UpstreamFetch } from "../proxy/authenticated-fetch.ts";
import { localListenerClient } from "../proxy/upstream/local-client.ts";
import type { ConnectionPeer } from "../proxy/upstream/types.ts";
import { clientUrl } from "../state/workload-url.ts";
import type { WorkloadStore } from "../state/workloads.ts";
import { version } from "../version.ts";
import { type LiveWorkload, liveWorkload, liveWorkloadFetch, workloadGone } from "./live-workload.ts";
import { MAX_REDIRECTS, sameOriginRedirect } from "./same-origin-redirect.ts";

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
  let workload: LiveWorkload | undefined;
  // The listener the probe reached: a supervisor that no longer holds it is stopping, or gone.
  let reached: ConnectionPeer | undefined;
  try {
    // The probe carries the gateway key: it goes only to the supervisor's own listener, never to whoever
    // took the port of a supervisor that died a moment ago (nor through an http_proxy of the environment).
    workload = await liveWorkload(store, name);
    const watched: LiveWorkload = {
      ...workload,
      servesAt: (peer) => {
        reached = peer;
        return (workload as LiveWorkload).servesAt(peer);
      },
    };
    const send = liveWorkloadFetch(watched, localListenerClient().fetch);
    const stopping = () => reached !== undefined && !(workload as LiveWorkload).servesAt(reached);
    const legacy = await probe(send, url, authorization, "2025-06-18", {
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "mcpmgr-readiness", version } },
    });
    if (legacy.answered) {
      if (legacy.session)
        await send(legacy.at, { method: "DELETE", headers: { "mcp-session-id": legacy.session, ...authorization } })
          .then((response) => response.body?.cancel())
          .catch(() => {});
      if (stopping()) throw closedAsAnswered(name);
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
      throw new Error(`initialize answered ${answerOf(legacy)}, server/discover answered ${answerOf(modern)}`);
    if (stopping()) throw closedAsAnswered(name);
  } catch (err) {
    const stopping = await notServing(err, workload, reached ?? endpointPeer(url));
    throw new McpmgrError(
      "SERVER_FAILED",
      `${name} runs but does not answer MCP (initialize or server/discover) at ${url}: ${errorMessage(err)}`,
      // A supervisor that stopped serving (stopping, or gone) is the cause: startSupervisor reports a stop
      // or rm elsewhere in its own words rather than this.
      { hint: failureHint, ...(stopping ? { cause: notRunning(err) } : {}) },
    );
  }
}

/**
 * Whether the probe failed because the supervisor no longer serves (it is stopping, or gone): it no longer
 * holds the listener the probe reached (or, when none was reached, the one at the endpoint's address). A
 * supervisor told to stop refuses new connections a moment before its listener goes: looked at for a
 * little while (a failure of a supervisor that goes on serving is the server's, and said that much later).
 */
async function notServing(
  err: unknown,
  workload: LiveWorkload | undefined,
  peer: ConnectionPeer | undefined,
): Promise<boolean> {
  if (workloadGone(err)) return true;
  if (workload === undefined || peer === undefined) return false;
  const deadline = performance.now() + STOPPING_LOOK_MS;
  for (;;) {
    if (!workload.servesAt(peer)) return true;
    if (performance.now() >= deadline) return false;
    await Bun.sleep(50);
  }
}

/** How long a supervisor that failed the probe is watched for going away (a stop elsewhere under way). */
const STOPPING_LOOK_MS = 1_500;

function notRunning(err: unknown): McpmgrError {
  return isMcpmgrError(err) && err.code === "WORKLOAD_NOT_RUNNING"
    ? err
    : new McpmgrError("WORKLOAD_NOT_RUNNING", errorMessage(err));
}

/** The endpoint's own address, when it is one (a host name is resolved by the connection alone). */
function endpointPeer(url: string): ConnectionPeer | undefined {
  const { hostname, port } = new URL(url);
  const address = hostname.replace(/^\[(.*)\]$/, "$1");
  return isIP(address) === 0 ? undefined : { address, port: Number(port) };
}

/**
 * The supervisor answered the probe and closed its port: it is stopping (a `stop` or `rm` elsewhere; it lets
 * the requests in progress finish first), so the workload does not run.
 */
function closedAsAnswered(name: string): McpmgrError {
  return new McpmgrError(
    "WORKLOAD_NOT_RUNNING",
    `${name}'s supervisor closed its port as it answered (it is stopping)`,
  );
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
): Promise<ProbeAnswer> {
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
  const answered = response.ok && text.includes('"result"');
  const error = answered ? undefined : rpcErrorMessage(text);
  return { answered, status, at: target, ...(session ? { session } : {}), ...(error ? { error } : {}) };
}

interface ProbeAnswer {
  readonly answered: boolean;
  readonly status: number;
  readonly at: string;
  readonly session?: string;
  /** The JSON-RPC error the answer carried: the proxy's own refusal (a webhook's, a failing one's) says its cause. */
  readonly error?: string;
}

const answerOf = (answer: ProbeAnswer) =>
  answer.error === undefined ? String(answer.status) : `${answer.status} (${printable(excerpt(answer.error))})`;

/** The message of the JSON-RPC error in a plain or SSE answer, if it holds one. */
function rpcErrorMessage(text: string): string | undefined {
  for (const candidate of [text, ...text.split("\n").map((line) => /^data: ?(.*)$/.exec(line)?.[1] ?? "")]) {
    try {
      const message = (JSON.parse(candidate) as { error?: { message?: unknown } } | null)?.error?.message;
      if (typeof message === "string" && message !== "") return message;
    } catch {
      // not JSON: the next candidate
    }
  }
  return undefined;
}
