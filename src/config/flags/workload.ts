/** General, listener and workload options of `run`. */
import { allowedHostsOption, endpointPrefixOption, trustProxyHeadersOption } from "./proxy-listen.ts";
import { booleanOption, repeatableOption, stringOption } from "../option-spec.ts";
import {
  commaList,
  hostName,
  keyValue,
  listenHost,
  nonEmpty,
  oneOf,
  port,
  portMapping,
  volumeMount,
} from "../values.ts";

export const workloadOptions = {
  name: stringOption({
    description: "Name of the MCP server workload",
    valueHint: "name",
    defaultText: "auto-generated from the source",
    schema: nonEmpty,
  }),
  group: stringOption({
    description: "Group the workload belongs to; it must exist (mcpmgr group create NAME)",
    valueHint: "group",
    default: "default",
    schema: nonEmpty,
  }),
  foreground: booleanOption({
    short: "f",
    description:
      "Stay in the foreground until the server exits (refused in a group a gateway with policies guards, unless the run has its own --oidc-*: no gateway serves a foreground run)",
    default: false,
  }),
  "from-config": stringOption({
    description: "Run a server from an exported configuration file",
    valueHint: "path",
    schema: nonEmpty,
  }),
  label: repeatableOption({
    short: "l",
    description: "Container label key=value (repeatable; container workloads only)",
    valueHint: "key=value",
    schema: keyValue,
  }),
  transport: stringOption({
    description: "Transport the server speaks: stdio, sse or streamable-http",
    valueHint: "stdio|sse|streamable-http",
    schema: oneOf(["stdio", "sse", "streamable-http"] as const),
  }),
  "proxy-mode": stringOption({
    description: "How a stdio server is exposed: streamable-http, or sse (deprecated, will be removed)",
    valueHint: "streamable-http|sse",
    default: "streamable-http",
    schema: oneOf(["streamable-http", "sse"] as const),
  }),
  "proxy-port": stringOption({
    description: "Host port the HTTP proxy listens on (default: a free port)",
    valueHint: "port",
    schema: port,
  }),
  host: stringOption({
    description: "IP address or host name the HTTP proxy listens on",
    valueHint: "host",
    default: "127.0.0.1",
    schema: listenHost,
  }),
  "target-host": stringOption({
    description:
      "Host to forward traffic to (sse/streamable-http servers run as local processes; container workloads refuse it)",
    valueHint: "host",
    default: "127.0.0.1",
    schema: hostName,
  }),
  "target-port": stringOption({
    description: "Port the server listens on (sse and streamable-http transports only)",
    valueHint: "port",
    schema: port,
  }),
  "endpoint-prefix": endpointPrefixOption,
  "trust-proxy-headers": trustProxyHeadersOption,
  "allowed-hosts": allowedHostsOption,
  publish: repeatableOption({
    short: "p",
    description: "Publish a container port on 127.0.0.1, hostPort:containerPort (repeatable)",
    valueHint: "host:container",
    schema: portMapping,
  }),
  volume: repeatableOption({
    short: "v",
    description: "Mount host-path:container-path[:ro] (repeatable)",
    valueHint: "src:dst[:ro]",
    schema: volumeMount,
  }),
  tools: repeatableOption({
    description: "Comma-separated tool names to expose; others are hidden (repeatable)",
    valueHint: "names",
    schema: commaList,
  }),
  "tools-override": stringOption({
    description: "JSON file renaming tools and rewriting their descriptions",
    valueHint: "path",
    schema: nonEmpty,
  }),
  "ignore-globally": booleanOption({
    description: "Apply the global ignore patterns (~/.config/mcpmgr/mcpmgrignore) to mounts",
    default: true,
  }),
  "print-resolved-overlays": booleanOption({
    description: "Print which container paths are hidden by ignore patterns",
    default: false,
  }),
  "webhook-config": repeatableOption({
    description: "Webhook configuration file (repeatable; files are merged by webhook name)",
    valueHint: "path",
    schema: nonEmpty,
  }),
} as const;
