/**
 * The stdio bridge as a workload's upstream: one stdio server shared by every client session,
 * after its MCP handshake, behind the streamable-HTTP front end (or the deprecated legacy SSE
 * one, loaded only for --proxy-mode sse). Loaded by upstream.ts for stdio servers only.
 */
import { errorMessage, McpmgrError } from "../errors.ts";
import { callerOf } from "../middleware/caller.ts";
import { printable } from "../printable.ts";
import { StdioBridge } from "../proxy/stdio-bridge/bridge.ts";
import { lineChannel } from "../proxy/stdio-bridge/server-channel.ts";
import { streamableHttpFrontEnd } from "../proxy/stdio-bridge/streamable-http.ts";
import { allowsNetwork } from "../runtime/permission-profile.ts";
import type { ServerHandle } from "../runtime/server-handle.ts";
import { version } from "../version.ts";
import type { WorkloadContext } from "./context.ts";
import type { RunSpec } from "./run-spec.ts";
import { exitReason, keepOutput, LAST_OUTPUT, STRAY_STDOUT_QUOTE, unroutedLogLine } from "./server-output.ts";
import type { Upstream, UpstreamOptions } from "./upstream.ts";

/**
 * What to look at when the server never answered. A package the process sandbox must fetch with
 * no network (its profile gives none: `run` warned) most likely could not be fetched: that first.
 */
function handshakeHint(spec: RunSpec, withOutput: boolean): string {
  const { placement } = spec;
  const below = withOutput ? "; the server's last output is below" : "";
  if (
    placement.kind === "process" &&
    placement.bwrap !== undefined &&
    placement.source.localPath === undefined &&
    !allowsNetwork(placement.server.profile)
  ) {
    return `${placement.source.manager} had no network to fetch the package (this permission profile gives the sandbox none): run it with --permission-profile network or with a container engine, unless it is installed in the working directory${below}`;
  }
  return withOutput
    ? "check the package name and arguments, and the server's last output below"
    : "check the package name and arguments";
}

/** How long a server whose stdout ended may take to exit on its own before it is stopped. */
const STDOUT_CLOSED_GRACE_MS = 2_000;

export async function connectStdioServer(
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
    // A log message no client took goes where the server's stderr goes, so it is not lost.
    onUnroutedLog: (message) => {
      const line = unroutedLogLine(server, message.params);
      options.onServerOutput?.(line);
      ctx.log.debug(`${name} ${line.trimEnd()}`);
    },
  });
  const exited = exitReason(server, keepOutput(server, name, ctx.log, options.onServerOutput, false));
  const channel = lineChannel({
    stdout: server.stdout,
    stdin: server.stdin,
    onMessage: bridge.onServerMessage,
    onInvalidLine: (line) =>
      ctx.log.warn(`${name}: ${STRAY_STDOUT_QUOTE}${printable(server.redact(line).slice(0, 200))}`),
    onOversized: bridge.failOversized,
    maxMessageBytes: spec.limits.maxMessageBytes,
  });
  try {
    await bridge.start(channel);
  } catch (err) {
    // Prefer the exit code and the server's own words over "exited during initialize".
    const why = await Promise.race([exited, Bun.sleep(1_000).then(() => errorMessage(err))]);
    await server.stop(1_000);
    // The reason on the error line with the hint; the server's own words (often what is wrong) below it.
    const [reason = why, output] = why.split(`${LAST_OUTPUT}\n`);
    throw new McpmgrError("SERVER_FAILED", `${name} did not complete the MCP handshake: ${reason}`, {
      // --debug would add only that output, live.
      hint: handshakeHint(spec, output !== undefined && output !== ""),
      ...(output ? { details: output } : {}),
    });
  }
  // A server that closes its stdout but goes on running can never answer again: stopped, so its
  // exit is what a foreground run reports and what a supervisor restarts after. Not one that mcpmgr
  // is stopping: many close their stdout as they wind down, and that stop has its own grace.
  void channel.closed.then(async () => {
    if (server.stopping) return;
    const gone = await Promise.race([
      server.exited.then(() => true),
      Bun.sleep(STDOUT_CLOSED_GRACE_MS).then(() => false),
    ]);
    if (gone || server.stopping) return;
    ctx.log.warn(`${name}: the MCP server closed its stdout but kept running: stopping it`);
    await server.stop(1_000);
  });
  // Sessions and input-round state are bound to the authenticated caller: another user cannot use them.
  const handler =
    spec.proxyMode === "sse"
      ? (await import("../proxy/stdio-bridge/legacy-sse.ts")).legacySseFrontEnd({
          bridge,
          live: options.live,
          ...(spec.listen.endpointPrefix ? { endpointPrefix: spec.listen.endpointPrefix } : {}),
          principalOf: callerOf,
        })
      : streamableHttpFrontEnd({ bridge, live: options.live, principalOf: callerOf });
  return { handler, exited };
}
