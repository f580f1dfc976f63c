/**
 * The upstream of a workload's proxy, the second step of a start: a stdio server behind the
 * stdio bridge (after its MCP handshake), an HTTP server behind the transparent forwarder
 * (once it answers), or a remote URL behind the forwarder with mcpmgr's own credentials.
 */
import { errorMessage, McpmgrError } from "../errors.ts";
import { printable } from "../printable.ts";
import { callerOf } from "../middleware/caller.ts";
import { transparentForwarder } from "../proxy/forward.ts";
import type { Handler } from "../proxy/handler.ts";
import type { LiveStreams } from "../proxy/live-streams.ts";
import { StdioBridge } from "../proxy/stdio-bridge/bridge.ts";
import { legacySseFrontEnd } from "../proxy/stdio-bridge/legacy-sse.ts";
import { lineChannel } from "../proxy/stdio-bridge/server-channel.ts";
import { streamableHttpFrontEnd } from "../proxy/stdio-bridge/streamable-http.ts";
import type { LaunchedServer, ServerHandle } from "../runtime/server-handle.ts";
import { version } from "../version.ts";
import type { WorkloadContext } from "./context.ts";
import { outgoingAuthentication } from "./outgoing-auth.ts";
import type { RemotePlacement } from "./placement.ts";
import type { RunSpec } from "./run-spec.ts";
import { exitReason, keepOutput } from "./server-output.ts";

export interface Upstream {
  /** The innermost handler of the proxy's chain. */
  readonly handler: Handler;
  /** Resolves with the reason when the server stops on its own (never, for a remote URL). */
  readonly exited: Promise<string>;
}

export interface UpstreamOptions {
  readonly live: LiveStreams;
  /** Where the server's output goes besides error reports (the workload log under a supervisor). */
  readonly onServerOutput?: ((text: string) => void) | undefined;
}

/** How long an HTTP server may take to answer its first request. */
const HTTP_READY_TIMEOUT_MS = 60_000;

export async function connectRemote(
  spec: RunSpec,
  placement: RemotePlacement,
  ctx: WorkloadContext,
  options: UpstreamOptions,
): Promise<Upstream> {
  const upstreamFetch = await outgoingAuthentication(placement.outgoingAuth, placement.url, spec.name, ctx);
  return {
    handler: transparentForwarder({
      ...forwarderOptions(spec, options),
      target: placement.url,
      ...(upstreamFetch ? { fetch: upstreamFetch } : {}),
    }),
    exited: new Promise(() => {}),
  };
}

/** A started server's upstream; the server is stopped when it cannot be connected to. */
export async function connectServer(
  spec: RunSpec,
  launched: LaunchedServer,
  ctx: WorkloadContext,
  options: UpstreamOptions,
): Promise<Upstream> {
  return launched.http
    ? await connectHttpServer(spec, launched.server, launched.http, ctx, options)
    : await connectStdioServer(spec, launched.server, ctx, options);
}

async function connectHttpServer(
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
    waitForHttp(target, HTTP_READY_TIMEOUT_MS, unix).then(() => undefined, errorMessage),
    exited,
  ]);
  if (notListening !== undefined) {
    await server.stop(1_000);
    throw new McpmgrError("SERVER_FAILED", `${spec.name} did not start listening on ${target.host}: ${notListening}`, {
      hint: "check that the server honours MCP_PORT, or give --target-port",
    });
  }
  return {
    handler: transparentForwarder({
      ...forwarderOptions(spec, options),
      target,
      ...(unix ? { fetch: (url: string, init: RequestInit) => fetch(url, { ...init, unix }) } : {}),
    }),
    exited,
  };
}

async function connectStdioServer(
  spec: RunSpec,
  server: ServerHandle,
  ctx: WorkloadContext,
  options: UpstreamOptions,
): Promise<Upstream> {
  const { name } = spec;
  const bridge = new StdioBridge({
    clientInfo: { name: "mcpmgr", version },
    requestTimeoutMs: spec.limits.requestTimeoutMs,
    sessionIdleMs: spec.limits.sessionIdleMs,
    maxSessions: spec.limits.maxSessions,
    onLog: (level, text) => ctx.log[level](`${name}: ${text}`),
  });
  const exited = exitReason(server, keepOutput(server, name, ctx.log, options.onServerOutput, false));
  const channel = lineChannel({
    stdout: server.stdout,
    stdin: server.stdin,
    onMessage: bridge.onServerMessage,
    onInvalidLine: (line) =>
      ctx.log.warn(`${name}: skipped a non-JSON line on stdout: ${printable(server.redact(line).slice(0, 200))}`),
    onOversized: bridge.failOversized,
    maxMessageBytes: spec.limits.maxMessageBytes,
  });
  try {
    await bridge.start(channel);
  } catch (err) {
    // Prefer the exit code and the server's own words over "exited during initialize".
    const why = await Promise.race([exited, Bun.sleep(1_000).then(() => errorMessage(err))]);
    await server.stop(1_000);
    throw new McpmgrError("SERVER_FAILED", `${name} did not complete the MCP handshake: ${why}`, {
      hint: "check the package name and arguments; run with --debug for details",
    });
  }
  const handler =
    spec.proxyMode === "sse"
      ? legacySseFrontEnd({
          bridge,
          live: options.live,
          ...(spec.listen.endpointPrefix ? { endpointPrefix: spec.listen.endpointPrefix } : {}),
          principalOf: callerOf,
        })
      : // Sessions and input-round state are bound to the authenticated caller: another user cannot use them.
        streamableHttpFrontEnd({ bridge, live: options.live, principalOf: callerOf });
  return { handler, exited };
}

/** What every forwarder of a workload shares: the listener's options, limits, sessions bound to their callers. */
function forwarderOptions(spec: RunSpec, options: UpstreamOptions) {
  return {
    endpointPrefix: spec.listen.endpointPrefix,
    trustProxyHeaders: spec.listen.trustProxyHeaders,
    live: options.live,
    maxSessions: spec.limits.maxSessions,
    sessionIdleMs: spec.limits.sessionIdleMs,
    headersTimeoutMs: spec.limits.upstreamHeadersTimeoutMs,
    callerOf,
  };
}

/**
 * Resolves once an HTTP server answers at `url` (any status). A TCP accept is not enough: a
 * container's published port is accepted by the engine's port proxy before the server inside
 * listens, and those early connections are reset.
 */
async function waitForHttp(url: URL, timeoutMs: number, unix: string | undefined): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const controller = new AbortController();
    const answered = await fetch(url, {
      signal: AbortSignal.any([controller.signal, AbortSignal.timeout(2_000)]),
      ...(unix ? { unix } : {}),
    }).then(
      () => true,
      () => false,
    );
    // Headers are enough; an SSE endpoint would otherwise keep streaming.
    controller.abort();
    if (answered) return;
    await Bun.sleep(100);
  }
  throw new McpmgrError("SERVER_FAILED", `no HTTP answer on ${url.host} after ${timeoutMs / 1000} s`, {
    hint: "check that the server honours MCP_PORT, or give --target-port",
  });
}
