/**
 * `mcpmgr proxy`: the same policy chain as a workload's, over a remote MCP endpoint, with no
 * server to start and nothing recorded. Authentication modules are loaded only when asked
 * for: jose and oauth4webapi cost memory a plain proxy need not pay.
 */
import type { ProxySpec } from "../config/proxy-spec.ts";
import { errorMessage } from "../errors.ts";
import { clientUrl } from "../state/workload-url.ts";
import { transparentForwarder } from "../proxy/forward.ts";
import { LiveStreams } from "../proxy/live-streams.ts";
import { serve } from "../proxy/serve.ts";
import type { WorkloadContext } from "./context.ts";
import { proxyLimits } from "./limits.ts";
import { outgoingAuthentication } from "./outgoing-auth.ts";
import { callerOf } from "../middleware/caller.ts";
import { forwardedNames } from "../middleware/host-names.ts";
import { policyChain } from "../middleware/policy-chain.ts";

export interface RunningProxy {
  /** The URL MCP clients use. */
  readonly url: string;
  stop(): Promise<void>;
}

export async function startStandaloneProxy(spec: ProxySpec, ctx: WorkloadContext): Promise<RunningProxy> {
  const live = new LiveStreams();
  const limits = proxyLimits(ctx.env);
  const authentication = spec.incomingAuth
    ? (
        await (await import("./incoming-auth.ts")).prepareIncomingAuthentication(spec.incomingAuth, ctx.log)
      ).forEndpoint(spec.target.pathname, { ...spec.listen, trustProxyHeaders: spec.trustProxyHeaders })
    : [];
  const upstreamFetch = await outgoingAuthentication(spec.outgoingAuth, spec.target, spec.serverName, ctx);
  const handler = await policyChain(
    transparentForwarder({
      target: spec.target,
      endpointPrefix: spec.endpointPrefix,
      trustProxyHeaders: spec.trustProxyHeaders,
      answersTo: forwardedNames(spec.trustProxyHeaders, spec.listen.host, spec.listen.allowedHosts),
      live,
      maxSessions: limits.maxSessions,
      sessionIdleMs: limits.sessionIdleMs,
      headersTimeoutMs: limits.upstreamHeadersTimeoutMs,
      maxMessageBytes: limits.maxMessageBytes,
      onWarning: (text) => ctx.log.warn(text),
      // Sessions belong to the caller that opened them (with --oidc-*; one anonymous caller without).
      callerOf,
      ...(upstreamFetch ? { fetch: upstreamFetch } : {}),
    }),
    {
      serverName: spec.serverName,
      listenHost: spec.listen.host,
      trustProxyHeaders: spec.trustProxyHeaders,
      allowedHosts: spec.listen.allowedHosts,
      maxBodyBytes: limits.maxBodyBytes,
      maxMessageBytes: limits.maxMessageBytes,
    },
    { authentication },
  );
  const server = serve({
    host: spec.listen.host,
    port: spec.listen.port,
    handler,
    live,
    onError: (err) => ctx.log.error(`request failed inside the proxy: ${errorMessage(err)}`),
  });
  return { url: clientUrl(spec.listen.host, server.port, spec.target.pathname), stop: () => server.shutdown() };
}
