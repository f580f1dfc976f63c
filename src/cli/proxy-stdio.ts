/**
 * `mcpmgr proxy stdio URL_OR_WORKLOAD`: a remote (or local workload's) MCP endpoint exposed
 * as a stdio server, for clients that only speak stdio (the relay is
 * proxy/remote-client/stdio-relay.ts). mcpmgr adds its own credentials (the same
 * outgoing-auth options as `proxy`) to every HTTP request. stdout carries only the protocol;
 * everything else goes to stderr. A workload is relayed to only while its supervisor (or, for a
 * foreground run, its own process) serves it (workload/live-workload.ts): never to whatever listens
 * on a stopped workload's port. A workload the relay loses (stopped, or moved to another port by a
 * restart or `rm` + `run --from-config`) is looked up again by name, through the same `endpointOf` and
 * its checks, and followed to where it serves now.
 */
import { parseArgv } from "../config/argv.ts";
import { assertCredentialsOverHttps, outgoingAuthSpec } from "../config/outgoing-auth-spec.ts";
import { proxyStdioOptions } from "../config/proxy-stdio-options.ts";
import { checkOutgoingAuthRules } from "../config/rules.ts";
import { quotableUrl, refuseUrlCredentials } from "../config/url-credentials.ts";
import { closeMatches, didYouMean } from "../close-matches.ts";
import { McpmgrError } from "../errors.ts";
import { localListenerClient } from "../proxy/upstream/local-client.ts";
import { startStdioRelay } from "../proxy/remote-client/stdio-relay.ts";
import { liveForegroundRun } from "../state/foreground-runs.ts";
import { assertAnswersDirectCallers, groupGateways } from "../state/gateway-guard.ts";
import { clientTransport, workloadUrl } from "../state/workload-url.ts";
import { assertForegroundRunAnswers } from "../workload/foreground.ts";
import { maxMessageBytesFromEnv } from "../workload/limits.ts";
import {
  type LiveWorkload,
  liveForegroundWorkload,
  liveWorkload,
  liveWorkloadFetch,
  runningForegroundAt,
  runningWorkloadAt,
} from "../workload/live-workload.ts";
import { outgoingAuthentication } from "../workload/outgoing-auth.ts";
import { cliContext } from "./context.ts";
import { log } from "./output.ts";
import { openStore } from "./workload-arg.ts";

interface Endpoint {
  readonly target: URL;
  /** For a workload: whether its supervisor (or foreground run) serves it, checked around every request and connection. */
  readonly workload?: LiveWorkload;
}

/** The MCP endpoint `proxy stdio` relays to: a URL as given, or a running workload's client URL. */
async function endpointOf(text: string): Promise<Endpoint> {
  if (/^https?:\/\//i.test(text)) {
    if (!URL.canParse(text))
      throw new McpmgrError("INVALID_ARGUMENT", `${JSON.stringify(quotableUrl(text))} is not a valid URL`, {
        hint: "write it as https://host/path",
      });
    const target = new URL(text);
    refuseUrlCredentials(target, "the URL");
    // One of our own workloads' URLs (Claude Desktop's entry written by hand, say) is refused as its name is:
    // a guarded member would answer every request 403, reported as an unreachable remote.
    // (Workloads serve plain http: an https URL is none of them.)
    if (target.protocol === "http:") {
      const store = openStore();
      const own = await runningWorkloadAt(store, target);
      if (own !== undefined) assertAnswersDirectCallers(store.paths, own, await groupGateways(store, own.group));
      // A foreground run has no record: its claim holds its URL (and, once it serves, what refuses it).
      const run = runningForegroundAt(store.paths, target);
      if (run !== undefined) assertForegroundRunAnswers(store.paths, run.name, run.serving);
    }
    return { target };
  }
  // Not a name either: said as a URL (a workload name's error would quote it whole, password included).
  if (/^\s*[A-Za-z][\w+.-]*:\/\//.test(text))
    throw new McpmgrError("INVALID_ARGUMENT", `unknown scheme in ${JSON.stringify(quotableUrl(text))}`, {
      hint: "give the MCP endpoint's URL (https://host/mcp) or a name from 'mcpmgr list'",
    });
  const store = openStore();
  const record = await store.get(text);
  if (record === undefined) {
    // A foreground run has no record; AI clients get its entry while it runs, Claude Desktop's included.
    const foreground = liveForegroundWorkload(store.paths, text);
    if (foreground !== undefined) {
      // Every request would come back 403 while a gateway with policies guards its group: said at once.
      assertForegroundRunAnswers(store.paths, text, liveForegroundRun(store.paths, text)?.serving);
      return { target: foreground.url, workload: foreground };
    }
    // A mistyped name (in a hand-written Claude Desktop entry, say) gets the nearest workload's, as stop and logs do.
    const { records } = await store.listReadable();
    const near = didYouMean(
      closeMatches(
        text,
        records.map((r) => r.name),
        { nearestOnly: true },
      ),
    );
    throw new McpmgrError(
      "WORKLOAD_NOT_FOUND",
      `${JSON.stringify(quotableUrl(text))} is neither a URL nor a workload`,
      {
        hint: `${near === undefined ? "" : `${near} `}give the MCP endpoint's URL (https://host/mcp) or a name from 'mcpmgr list'`,
      },
    );
  }
  // The relay speaks streamable HTTP only: against an SSE endpoint every request would fail with
  // the endpoint's "open /sse first", after a line that says it relays.
  if (clientTransport(record) === "sse")
    throw new McpmgrError(
      "INVALID_ARGUMENT",
      `workload ${text} serves the deprecated HTTP+SSE transport (${workloadUrl(record)}), which 'mcpmgr proxy stdio' cannot relay`,
      {
        hint: `run it with the default --proxy-mode streamable-http (for a stdio server), or connect the client to ${workloadUrl(record)} itself`,
      },
    );
  const workload = await liveWorkload(store, text);
  // Every request would be refused (403) and answered as an unreachable remote, in Claude Desktop's log.
  // The hint names the background gateways that guard the group: another of its gateways, without
  // policies (or stopped), would relay around the policies, or not at all.
  assertAnswersDirectCallers(store.paths, record, await groupGateways(store, record.group));
  return { target: workload.url, workload };
}

export async function runProxyStdio(argv: readonly string[]): Promise<void> {
  const { values, given, positionals, passthrough } = parseArgv(argv, proxyStdioOptions, "proxy stdio", false);
  if (passthrough.length > 0)
    throw new McpmgrError("INVALID_ARGUMENT", "'mcpmgr proxy stdio' takes no arguments after --", {
      hint: "remove them",
    });
  const [targetText, ...extra] = positionals;
  if (targetText === undefined)
    throw new McpmgrError("MISSING_OPTION", "missing URL_OR_WORKLOAD", {
      hint: "usage: mcpmgr proxy stdio URL_OR_WORKLOAD [options]",
    });
  if (extra.length > 0)
    throw new McpmgrError("INVALID_ARGUMENT", `unexpected argument ${JSON.stringify(extra[0])}`, {
      hint: "give one URL or workload name",
    });
  // Any of them, before the rules between them ask for --token-exchange-url, which would be refused next.
  const exchange = [...given].find((name) => name.startsWith("token-exchange-"));
  if (exchange !== undefined) {
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      `--${exchange}: token exchange trades an incoming client's token, and a stdio client has none`,
      { hint: "use --remote-auth or a bearer token" },
    );
  }
  checkOutgoingAuthRules(given);
  const maxMessageBytes = maxMessageBytesFromEnv(process.env);
  const spec = outgoingAuthSpec(values, given);
  const { target, workload } = await endpointOf(targetText);
  // A workload's URL is this machine's own listener (bound to one of its addresses): only a URL given is elsewhere.
  if (workload === undefined) assertCredentialsOverHttps(spec, target);
  // A workload is reached directly (never through the environment's proxy), on connections checked to be its own.
  const upstream = workload === undefined ? undefined : localListenerClient().fetch;
  const credentialed = await outgoingAuthentication(spec, target, "stdio", cliContext(), undefined, upstream);
  // The same name in the same home, with every check of the first lookup; credentials scoped anew to a new URL.
  const follow =
    workload === undefined || upstream === undefined
      ? undefined
      : async () => {
          // A name gone from the home (removed, a foreground run ended) is said as the relayed workload's end.
          const now = await endpointOf(targetText).catch(async (err: unknown) => {
            if (err instanceof McpmgrError && err.code === "WORKLOAD_NOT_FOUND") await workload.assertRunning();
            throw err;
          });
          if (now.workload === undefined) throw new Error(`${targetText} no longer names a workload`);
          const scoped =
            now.target.href === target.href
              ? credentialed
              : await outgoingAuthentication(spec, now.target, "stdio", cliContext(), undefined, upstream);
          return { target: now.target, fetch: liveWorkloadFetch(now.workload, scoped ?? upstream) };
        };
  const relay = await startStdioRelay({
    target,
    fetch:
      workload === undefined || upstream === undefined
        ? credentialed
        : liveWorkloadFetch(workload, credentialed ?? upstream),
    ...(follow ? { follow } : {}),
    stdin: process.stdin,
    stdout: process.stdout,
    log,
    maxMessageBytes,
  });
  log.info(`relaying stdio to ${target.origin}${target.pathname}`);
  process.exit(await relay.finished);
}
