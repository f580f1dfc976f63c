/** Where `mcpmgr gateway` listens, how it names the group's tools, and whether it runs in the background. */
import { allowedHostsOption, trustProxyHeadersOption } from "./proxy-listen.ts";
import { booleanOption, repeatableOption, stringOption } from "../option-spec.ts";
import { commaList, listenHost, nonEmpty, oneOf, port } from "../values.ts";

export const gatewayListenOptions = {
  host: stringOption({
    description: "IP address or host name the gateway listens on",
    valueHint: "host",
    default: "127.0.0.1",
    schema: listenHost,
  }),
  port: stringOption({
    description: "Port the gateway listens on (default: a free port)",
    valueHint: "port",
    schema: port,
  }),
  "name-prefix": stringOption({
    description:
      "How tool and prompt names get their workload's prefix: always (<workload>_<name>), or when-needed (only names two workloads share)",
    valueHint: "always|when-needed",
    default: "always",
    schema: oneOf(["always", "when-needed"] as const),
  }),
  "trust-proxy-headers": trustProxyHeadersOption,
  "allowed-hosts": allowedHostsOption,
} as const;

/** The policy options `run` has, applied to the gateway's own names. */
export const gatewayPolicyOptions = {
  tools: repeatableOption({
    description: "Comma-separated gateway tool names (<workload>_<tool>) to expose; others are hidden (repeatable)",
    valueHint: "names",
    schema: commaList,
  }),
  "tools-override": stringOption({
    description: "JSON file renaming the gateway's tools and rewriting their descriptions (keys are gateway names)",
    valueHint: "path",
    schema: nonEmpty,
  }),
} as const;

/**
 * `gateway GROUP` stays in the foreground like `proxy`; `--detach` makes it a background
 * workload (recorded, supervised, listed, stopped and removed like one). Every other option is
 * stored with it and given to the gateway again on each start.
 */
export const gatewayBackgroundOptions = {
  detach: booleanOption({
    description: "Run the gateway in the background as a workload (see 'mcpmgr list', 'stop', 'rm')",
    default: false,
  }),
  name: stringOption({
    description: "Name of the background gateway's workload (with --detach)",
    valueHint: "name",
    defaultText: "gateway-GROUP",
    schema: nonEmpty,
  }),
} as const;
