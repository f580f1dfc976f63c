/**
 * Test wiring of the stdio bridge: a real stdio MCP server process (by default the
 * conformance fixture in stdio mode) behind the bridge's HTTP front ends on a free port.
 */
import { StdioBridge, type BridgeOptions } from "../../src/proxy/stdio-bridge/bridge.ts";
import { lineChannel } from "../../src/proxy/stdio-bridge/server-channel.ts";
import { streamableHttpFrontEnd } from "../../src/proxy/stdio-bridge/streamable-http.ts";
import { legacySseFrontEnd } from "../../src/proxy/stdio-bridge/legacy-sse.ts";
import { LiveStreams } from "../../src/proxy/live-streams.ts";
import { serve } from "../../src/proxy/serve.ts";
import { withBuiltinProtections } from "../../src/middleware/builtin-chain.ts";
import type { Middleware } from "../../src/proxy/handler.ts";
import { CONFORMANCE_FIXTURE } from "./conformance.ts";

export async function startBridge(
  options: {
    cmd?: string[];
    mode?: "streamable-http" | "sse";
    bridge?: BridgeOptions;
    middleware?: readonly Middleware[];
    /** Largest message the server may send (MCPMGR_MAX_MESSAGE_BYTES). */
    maxMessageBytes?: number;
    principalOf?: (req: Request) => string | undefined;
  } = {},
) {
  const proc = Bun.spawn(options.cmd ?? [process.execPath, CONFORMANCE_FIXTURE, "stdio"], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  let stderr = "";
  void (async () => {
    for await (const chunk of proc.stderr) stderr += new TextDecoder().decode(chunk);
  })();
  const invalidLines: string[] = [];
  const bridge = new StdioBridge(options.bridge ?? {});
  const channel = lineChannel({
    stdout: proc.stdout,
    stdin: proc.stdin,
    onMessage: bridge.onServerMessage,
    onInvalidLine: (line) => invalidLines.push(line),
    onOversized: bridge.failOversized,
    ...(options.maxMessageBytes ? { maxMessageBytes: options.maxMessageBytes } : {}),
  });
  await bridge.start(channel);
  const live = new LiveStreams();
  const frontEnd =
    options.mode === "sse"
      ? legacySseFrontEnd({ bridge, live })
      : streamableHttpFrontEnd({ bridge, live, ...(options.principalOf ? { principalOf: options.principalOf } : {}) });
  const handler = withBuiltinProtections(
    frontEnd,
    { serverName: "bridge-test", listenHost: "127.0.0.1", trustProxyHeaders: false, allowedHosts: [] },
    ...(options.middleware ?? []),
  );
  const server = serve({ host: "127.0.0.1", port: 0, handler, live });
  const url = new URL(options.mode === "sse" ? "/sse" : "/mcp", server.url).href;
  return {
    url,
    server,
    bridge,
    proc,
    invalidLines,
    stderr: () => stderr,
    async stop() {
      await server.shutdown(500);
      proc.kill();
      await proc.exited;
    },
  };
}
