/**
 * The client for this machine's own listeners: a workload's port as the gateway reaches a member
 * (gateway/member-send.ts) and as `proxy stdio NAME` reaches a workload. Such a listener is never
 * reached through an HTTP proxy from the environment (http_proxy): the proxy would be handed what the
 * request carries (the gateway key, a user's token) in clear text whenever the workload listens beyond
 * loopback (`--host` with a network address, seldom named by no_proxy). Nothing is left to fetch, which
 * would take that proxy and open its connections where `checkConnection` cannot see them: a request
 * this client cannot send itself is refused.
 */
import { McpmgrError } from "../../errors.ts";
import { createUpstreamClient, type UpstreamClient } from "./client.ts";

/** The environment's proxy variables, which never apply to a local listener. */
const proxyVariable = /^(?:http|https|all)_proxy$/i;

let client: UpstreamClient | undefined;

export function localListenerClient(): UpstreamClient {
  client ??= createUpstreamClient({
    env: Object.fromEntries(Object.entries(process.env).filter(([name]) => !proxyVariable.test(name))),
    fallback: () => {
      throw new McpmgrError("INTERNAL", "a request to a local workload that mcpmgr's own client does not send", {
        hint: "report this as a bug: requests to a workload's port go through mcpmgr's own client only",
      });
    },
  });
  return client;
}
