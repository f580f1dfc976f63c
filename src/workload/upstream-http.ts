/**
 * The transparent forwarder as a workload's upstream: to a remote URL with mcpmgr's own
 * credentials, or to an HTTP server mcpmgr started, once it answers (through its relay's
 * Unix socket for an isolated container). Loaded by upstream.ts for these kinds only.
 */
import { errorMessage, McpmgrError } from "../errors.ts";
import { callerOf } from "../middleware/caller.ts";
import { forwardedNames } from "../middleware/host-names.ts";
import { transparentForwarder } from "../proxy/forward.ts";
import { createUpstreamClient } from "../proxy/upstream/client.ts";
import type { ServerHandle, LaunchedServer } from "../runtime/server-handle.ts";
import type { WorkloadContext } from "./context.ts";
import { outgoingCredentials } from "./outgoing-auth.ts";
import type { RemotePlacement } from "./placement.ts";
import type { RunSpec } from "./run-spec.ts";
import { MAX_REDIRECTS, redirectTarget, sameOriginRedirect } from "./same-origin-redirect.ts";
import { exitReason, keepOutput } from "./server-output.ts";
import type { Upstream, UpstreamOptions } from "./upstream.ts";

/** How long an HTTP server may take to answer its first request. */
const HTTP_READY_TIMEOUT_MS = 60_000;

export async function connectRemote(
  spec: RunSpec,
  placement: RemotePlacement,
  ctx: WorkloadContext,
  options: UpstreamOptions,
): Promise<Upstream> {
  const { fetch: upstreamFetch, redact } = await outgoingCredentials(
    placement.outgoingAuth,
    placement.url,
    spec.name,
    ctx,
    options.signal,
  );
  return {
    handler: transparentForwarder({
      ...forwarderOptions(spec, options, ctx),
      target: placement.url,
      ...(upstreamFetch ? { fetch: upstreamFetch } : {}),
    }),
    exited: new Promise(() => {}),
    ...(redact ? { redact } : {}),
  };
}

/** An HTTP server mcpmgr started; it is stopped when it does not answer in time. */
export async function connectHttpServer(
  spec: RunSpec,
  server: ServerHandle,
  http: NonNullable<LaunchedServer["http"]>,
  ctx: WorkloadContext,
  options: UpstreamOptions,
): Promise<Upstream> {
  const exited = exitReason(server, keepOutput(server, spec.name, ctx.log, options.onServerOutput, true));
  const target = new URL(
    `http://${http.host.includes(":") ? `[${http.host}]` : http.host}:${http.port}${spec.endpointPath}`,
  );
  // An isolated container is reached through its relay's Unix socket only.
  const { unix } = http;
  const notListening = await Promise.race([
    waitForHttp(spec.name, target, HTTP_READY_TIMEOUT_MS, unix).then((refused) => refused, errorMessage),
    exited,
  ]);
  if (notListening !== undefined) {
    await server.stop(1_000);
    // It listens, and sends its clients elsewhere or round in circles: said as such, not as a server that never listened.
    if (notListening instanceof McpmgrError) throw notListening;
    throw new McpmgrError("SERVER_FAILED", `${spec.name} did not start listening on ${target.host}: ${notListening}`, {
      hint: "check that the server honours MCP_PORT, or give --target-port",
    });
  }
  return {
    handler: transparentForwarder({
      ...forwarderOptions(spec, options, ctx),
      target,
      // mcpmgr's own client on the socket, not fetch's `unix` option: fetch runs at most 256 requests at
      // once per process, and every open listen or GET stream of a client would hold one for good.
      ...(unix ? { fetch: createUpstreamClient({ unix }).fetch } : {}),
    }),
    exited,
  };
}

/** What every forwarder of a workload shares: the listener's options, limits, sessions bound to their callers. */
function forwarderOptions(spec: RunSpec, options: UpstreamOptions, ctx: WorkloadContext) {
  return {
    endpointPrefix: spec.listen.endpointPrefix,
    trustProxyHeaders: spec.listen.trustProxyHeaders,
    answersTo: forwardedNames(spec.listen.trustProxyHeaders, spec.listen.host, spec.listen.allowedHosts),
    live: options.live,
    maxSessions: spec.limits.maxSessions,
    sessionIdleMs: spec.limits.sessionIdleMs,
    headersTimeoutMs: spec.limits.upstreamHeadersTimeoutMs,
    maxMessageBytes: spec.limits.maxMessageBytes,
    onWarning: (text: string) => ctx.log.warn(`${spec.name}: ${text}`),
    callerOf,
  };
}

/**
 * Resolves once an HTTP server answers at `url` (any status). A TCP accept is not enough: a
 * container's published port is accepted by the engine's port proxy before the server inside
 * listens, and those early connections are reset. Redirects are not followed blindly: a 307/308 to
 * another origin, or a loop, would have been retried until the timeout and then reported as a
 * server that does not listen; both fail at once (same-origin-redirect.ts says which are followed).
 */
async function waitForHttp(
  name: string,
  url: URL,
  timeoutMs: number,
  unix: string | undefined,
): Promise<McpmgrError | undefined> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const answered = await answers(name, url, unix);
    if (answered !== false) return answered === true ? undefined : answered;
    await Bun.sleep(100);
  }
  throw new McpmgrError("SERVER_FAILED", `no HTTP answer on ${url.host} after ${timeoutMs / 1000} s`, {
    hint: "check that the server honours MCP_PORT, or give --target-port",
  });
}

/**
 * One try: whether the server answers at `url`, after the same-origin redirects it may make; the
 * error to report when it redirects elsewhere or in a loop.
 */
async function answers(name: string, url: URL, unix: string | undefined): Promise<boolean | McpmgrError> {
  const hint = `the server must answer MCP at ${url.pathname} on its own port: check its options for a base URL or path`;
  let at = url.href;
  for (let hops = 0; ; hops++) {
    const controller = new AbortController();
    const response = await fetch(at, {
      redirect: "manual",
      signal: AbortSignal.any([controller.signal, AbortSignal.timeout(2_000)]),
      ...(unix ? { unix } : {}),
    }).catch(() => undefined);
    // Headers are enough; an SSE endpoint would otherwise keep streaming.
    controller.abort();
    if (response === undefined) return false;
    const next = sameOriginRedirect(response, at);
    if (next === undefined) {
      // Only a 307/308 keeps the method, so only one to another origin sends MCP's POSTs there too. A
      // 301/302/303 (a browser's GET sent to a page, a login) says the server listens, wherever it points;
      // the readiness probe's POST judges whether it speaks MCP.
      const to = response.status === 307 || response.status === 308 ? redirectTarget(response, at) : undefined;
      if (to !== undefined && to.origin !== url.origin)
        return new McpmgrError(
          "SERVER_FAILED",
          `${name}'s server at ${url.href} redirects to ${to.href}, another origin, which mcpmgr does not follow`,
          { hint },
        );
      return true;
    }
    if (hops === MAX_REDIRECTS)
      return new McpmgrError(
        "SERVER_FAILED",
        `${name}'s server at ${url.href} redirects in a loop (${MAX_REDIRECTS} redirects followed, the last to ${next})`,
        { hint },
      );
    at = next;
  }
}
