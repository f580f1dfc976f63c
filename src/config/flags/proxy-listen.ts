/** Where `mcpmgr proxy` listens and what it forwards to. */
import { booleanOption, stringOption } from "../option-spec.ts";
import { hostName, httpUrl, pathPrefix, port } from "../values.ts";

export const proxyListenOptions = {
  "target-uri": stringOption({
    description: "URL of the MCP server endpoint to forward to (required)",
    valueHint: "url",
    schema: httpUrl,
  }),
  host: stringOption({
    description: "IP address or host name the proxy listens on",
    valueHint: "host",
    default: "127.0.0.1",
    schema: hostName,
  }),
  port: stringOption({
    description: "Port the proxy listens on (default: a free port)",
    valueHint: "port",
    schema: port,
  }),
  "endpoint-prefix": stringOption({
    description: "Path prefix prepended to the SSE endpoint URLs given to clients",
    valueHint: "url-path",
    schema: pathPrefix,
  }),
  "trust-proxy-headers": booleanOption({
    description: "Trust X-Forwarded-Proto/Host/Port/Prefix from a reverse proxy in front of mcpmgr",
    default: false,
  }),
} as const;
