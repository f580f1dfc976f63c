/** `mcpmgr proxy SERVER_NAME --target-uri URL`: a standalone transparent MCP proxy. */
import { defineCommand } from "citty";
import { proxyOptions } from "../config/proxy-options.ts";
import { proxyStdioOptions } from "../config/proxy-stdio-options.ts";
import { buildProxySpec, unsupportedProxyOptions, type ProxySpec } from "../config/proxy-spec.ts";
import { McpmgrError } from "../errors.ts";
import { withBuiltinProtections } from "../middleware/builtin-chain.ts";
import { transparentForwarder } from "../proxy/forward.ts";
import { LiveStreams } from "../proxy/live-streams.ts";
import { serve } from "../proxy/serve.ts";
import { toCittyArgs, withHelpSubCommands } from "./citty-args.ts";
import { maxBodyBytesFromEnv } from "./limits.ts";
import { log, printResult } from "./output.ts";
import { untilSignal } from "./signals.ts";

const siblings: Readonly<Record<string, string>> = {
  tunnel: "'mcpmgr proxy tunnel'",
};

/** `proxy stdio`'s help; its argv is parsed by proxy-stdio.ts (loaded only when it runs). */
const stdioCommand = defineCommand({
  meta: {
    name: "stdio",
    description: "Expose a remote MCP endpoint (or a workload's) as a stdio server, with mcpmgr's credentials for it",
  },
  args: toCittyArgs(proxyStdioOptions, {
    URL_OR_WORKLOAD: { description: "URL of the MCP endpoint, or the name of a workload", required: true },
  }),
});

const proxyCommand = defineCommand({
  meta: {
    name: "proxy",
    description:
      "Run a transparent HTTP proxy in front of an MCP server endpoint (no workload is created); 'mcpmgr proxy stdio' relays one over stdio",
  },
  args: toCittyArgs(
    proxyOptions,
    { SERVER_NAME: { description: "Name for this proxy (used in logs)", required: true } },
    new Set(unsupportedProxyOptions.keys()),
  ),
  async run({ rawArgs }) {
    // Loaded on demand: the stdio relay brings the SDK's transports, which the HTTP proxy does not need.
    if (rawArgs[0] === "stdio") return (await import("./proxy-stdio.ts")).runProxyStdio(rawArgs.slice(1));
    const sibling = siblings[rawArgs[0] ?? ""];
    if (sibling !== undefined) {
      throw new McpmgrError("NOT_SUPPORTED_YET", `${sibling} is not supported yet`, {
        hint: "use 'mcpmgr proxy SERVER_NAME --target-uri URL'",
      });
    }
    await runProxy(buildProxySpec(rawArgs));
  },
});

/**
 * `stdio` is listed as a subcommand for help only: `run` above dispatches the first word
 * itself, since citty would take any first word (the SERVER_NAME) for a subcommand.
 */
export default withHelpSubCommands(proxyCommand, { stdio: stdioCommand });

async function runProxy(spec: ProxySpec): Promise<void> {
  const live = new LiveStreams();
  // Loaded only when configured: jose and oauth4webapi cost memory a plain proxy need not pay.
  const authn = spec.incomingAuth
    ? await (await import("./incoming-auth.ts")).incomingAuthentication(
        spec.incomingAuth,
        spec.target.pathname,
        spec.trustProxyHeaders,
      )
    : [];
  const outgoing = spec.outgoingAuth;
  const needsOutgoing =
    outgoing.mode.kind !== "none" ||
    outgoing.tokenExchange !== undefined ||
    outgoing.headers.length > 0 ||
    outgoing.secretHeaders.length > 0;
  const upstreamFetch = needsOutgoing
    ? await (await import("./outgoing-auth.ts")).prepareOutgoingAuthentication(outgoing, spec.target, spec.serverName)
    : undefined;
  const handler = withBuiltinProtections(
    transparentForwarder({
      target: spec.target,
      endpointPrefix: spec.endpointPrefix,
      trustProxyHeaders: spec.trustProxyHeaders,
      live,
      ...(upstreamFetch ? { fetch: upstreamFetch } : {}),
    }),
    {
      serverName: spec.serverName,
      listenHost: spec.listen.host,
      trustProxyHeaders: spec.trustProxyHeaders,
      maxBodyBytes: maxBodyBytesFromEnv(),
    },
    ...authn,
  );
  const server = serve({
    host: spec.listen.host,
    port: spec.listen.port,
    handler,
    live,
    onError: (err) => log.error(`request failed inside the proxy: ${err instanceof Error ? err.message : String(err)}`),
  });
  const clientUrl = new URL(spec.target.pathname, clientBase(server.url));
  log.info(`proxy '${spec.serverName}' forwarding to ${spec.target.origin}${spec.target.pathname}`);
  log.info("MCP clients connect to:");
  printResult(clientUrl.href);

  const signal = await untilSignal();
  log.info(`${signal}: stopping proxy '${spec.serverName}'`);
  await server.shutdown();
}

/** A wildcard bind address is not something a client can connect to. */
function clientBase(url: URL): URL {
  const base = new URL(url);
  if (base.hostname === "0.0.0.0") base.hostname = "127.0.0.1";
  if (base.hostname === "[::]") base.hostname = "[::1]";
  return base;
}
