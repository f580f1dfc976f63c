/** `mcpmgr proxy SERVER_NAME --target-uri URL`: a standalone transparent MCP proxy. */
import { defineCommand } from "citty";
import { proxyOptions } from "../config/proxy-options.ts";
import { proxyStdioOptions } from "../config/proxy-stdio-options.ts";
import { buildProxySpec } from "../config/proxy-spec.ts";
import { McpmgrError } from "../errors.ts";
import { startStandaloneProxy } from "../workload/standalone-proxy.ts";
import { toCittyArgs, withExamples, withHelpSubCommands } from "./citty-args.ts";
import { cliContext } from "./context.ts";
import { log, printResult } from "./output.ts";
import { warnIfReachable } from "./reachable-notice.ts";
import { untilSignal } from "./signals.ts";

const siblings: Readonly<Record<string, string>> = {
  tunnel: "'mcpmgr proxy tunnel'",
};

/** `proxy stdio`'s help; its argv is parsed by proxy-stdio.ts (loaded only when it runs). */
const stdioCommand = withExamples(
  defineCommand({
    meta: {
      name: "stdio",
      description: "Expose a remote MCP endpoint (or a workload's) as a stdio server, with mcpmgr's credentials for it",
    },
    args: toCittyArgs(proxyStdioOptions, {
      URL_OR_WORKLOAD: {
        description: "URL of the MCP endpoint, or the name of a workload",
        required: true,
        completes: "workloads",
      },
    }),
  }),
  [
    { description: "Give a stdio-only client the workload 'fetch'", command: "mcpmgr proxy stdio fetch" },
    {
      description: "Relay a remote endpoint, logging in with OAuth",
      command: "mcpmgr proxy stdio https://mcp.example.com/mcp --remote-auth",
    },
  ],
);

/** `proxy tunnel` is in the spec but not built: its help says so, and so does running it (below). */
const tunnelCommand = defineCommand({
  meta: {
    name: "tunnel",
    description: "Not implemented in this version: use 'mcpmgr proxy SERVER_NAME --target-uri URL' (docs/proxy.md)",
    hidden: true,
  },
  args: {},
});

const proxyCommand = defineCommand({
  meta: {
    name: "proxy",
    description:
      "Run a transparent HTTP proxy in front of an MCP server endpoint (no workload is created); 'mcpmgr proxy stdio' relays one over stdio",
  },
  args: toCittyArgs(proxyOptions, {
    SERVER_NAME: {
      description: "Name for this proxy (used in logs)",
      required: true,
      // The generic usage line would leave out --target-uri, which proxy needs as much.
      whenMissing: {
        message: "missing SERVER_NAME: a name for this proxy (used in logs)",
        hint: "usage: mcpmgr proxy SERVER_NAME --target-uri URL, e.g. mcpmgr proxy fetch --target-uri http://127.0.0.1:8080/mcp",
      },
    },
  }),
  async run({ rawArgs }) {
    // Loaded on demand: the stdio relay brings the SDK's transports, which the HTTP proxy does not need.
    if (rawArgs[0] === "stdio") return (await import("./proxy-stdio.ts")).runProxyStdio(rawArgs.slice(1));
    const sibling = siblings[rawArgs[0] ?? ""];
    if (sibling !== undefined) {
      throw new McpmgrError("NOT_SUPPORTED_YET", `${sibling} is not supported yet`, {
        hint: "use 'mcpmgr proxy SERVER_NAME --target-uri URL'",
      });
    }
    const spec = buildProxySpec(rawArgs);
    const proxy = await startStandaloneProxy(spec, cliContext());
    // Listened for before the URL is printed: whoever reads it may signal at once, and a signal with no
    // handler yet would end the process without its graceful stop.
    const signalled = untilSignal();
    log.info(`proxy '${spec.serverName}' forwarding to ${spec.target.origin}${spec.target.pathname}`);
    log.info("MCP clients connect to:");
    printResult(proxy.url);
    warnIfReachable(`proxy '${spec.serverName}'`, spec.listen.host, proxy.url, { issuer: spec.incomingAuth?.issuer });
    const signal = await signalled;
    log.info(`${signal}: stopping proxy '${spec.serverName}'`);
    await proxy.stop();
  },
});

/**
 * `stdio` and `tunnel` are listed as subcommands for help only: `run` above dispatches the first
 * word itself, since citty would take any first word (the SERVER_NAME) for a subcommand.
 */
export default withExamples(withHelpSubCommands(proxyCommand, { stdio: stdioCommand, tunnel: tunnelCommand }), [
  {
    description: "Proxy a local MCP server on port 8080",
    command: "mcpmgr proxy local --target-uri http://127.0.0.1:3000/mcp --port 8080",
  },
  {
    description: "Require a token from your OIDC provider in front of a remote server",
    command:
      "mcpmgr proxy team --target-uri https://mcp.example.com/mcp --oidc-issuer https://login.example.com --oidc-audience mcpmgr",
  },
  { description: "Relay a workload to a client that speaks only stdio", command: "mcpmgr proxy stdio fetch" },
]);
