/**
 * The upstream of a workload's proxy, the second step of a start: a stdio server behind the
 * stdio bridge (after its MCP handshake, upstream-stdio.ts), an HTTP server behind the
 * transparent forwarder (once it answers), or a remote URL behind the forwarder with
 * mcpmgr's own credentials (upstream-http.ts). Each kind loads only its own machinery: a
 * remote workload's supervisor never loads the bridge, a stdio one never the forwarder.
 */
import type { Handler } from "../proxy/handler.ts";
import type { LiveStreams } from "../proxy/live-streams.ts";
import type { LaunchedServer } from "../runtime/server-handle.ts";
import type { WorkloadContext } from "./context.ts";
import type { RemotePlacement } from "./placement.ts";
import type { RunSpec } from "./run-spec.ts";

export interface Upstream {
  /** The innermost handler of the proxy's chain. */
  readonly handler: Handler;
  /** Resolves with the reason when the server stops on its own (never, for a remote URL). */
  readonly exited: Promise<string>;
  /** A remote's: scrubs the secret values mcpmgr sends it (audit data), as a launched server's handle does its own. */
  readonly redact?: (text: string) => string;
}

export interface UpstreamOptions {
  readonly live: LiveStreams;
  /** Where the server's output goes besides error reports (the workload log under a supervisor). */
  readonly onServerOutput?: ((text: string) => void) | undefined;
  /** Aborted when the start is given up (a remote's login waiting for the browser ends at once). */
  readonly signal?: AbortSignal;
}

export async function connectRemote(
  spec: RunSpec,
  placement: RemotePlacement,
  ctx: WorkloadContext,
  options: UpstreamOptions,
): Promise<Upstream> {
  const { connectRemote } = await import("./upstream-http.ts");
  return connectRemote(spec, placement, ctx, options);
}

/** A started server's upstream; the server is stopped when it cannot be connected to. */
export async function connectServer(
  spec: RunSpec,
  launched: LaunchedServer,
  ctx: WorkloadContext,
  options: UpstreamOptions,
): Promise<Upstream> {
  if (launched.http) {
    const { connectHttpServer } = await import("./upstream-http.ts");
    return connectHttpServer(spec, launched.server, launched.http, ctx, options);
  }
  const { connectStdioServer } = await import("./upstream-stdio.ts");
  return connectStdioServer(spec, launched.server, ctx, options);
}
