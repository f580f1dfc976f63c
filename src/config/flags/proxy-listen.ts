/** Where `mcpmgr proxy` listens and what it forwards to. */
import { allowedHostList } from "../allowed-hosts.ts";
import { booleanOption, repeatableOption, stringOption } from "../option-spec.ts";
import { listenHost, pathPrefix, port, serverHttpUrl } from "../values.ts";

/**
 * `--allowed-hosts` of every command that listens for clients (`run`, `proxy`, `gateway`): one
 * declaration, so help, parsing and completion say the same everywhere.
 */
export const allowedHostsOption = repeatableOption({
  description:
    "Host names clients may use besides localhost (bound beyond loopback, also IP addresses and this machine's name); others get 403. Comma-separated, .example.com includes subdomains (repeatable)",
  valueHint: "names",
  schema: allowedHostList,
});

/** `--trust-proxy-headers` of every command that listens for clients behind a reverse proxy. */
export const trustProxyHeadersOption = booleanOption({
  description: "Trust X-Forwarded-Proto/Host/Port/Prefix from a reverse proxy in front of mcpmgr",
  default: false,
});

/** `--endpoint-prefix` of `run` and `proxy`: the legacy SSE `endpoint` event's URL behind a reverse proxy. */
export const endpointPrefixOption = stringOption({
  description: "Path prefix prepended to the SSE endpoint URLs given to clients",
  valueHint: "url-path",
  schema: pathPrefix,
});

export const proxyListenOptions = {
  "target-uri": stringOption({
    description: "URL of the MCP server endpoint to forward to (required)",
    valueHint: "url",
    schema: serverHttpUrl,
  }),
  host: stringOption({
    description: "IP address or host name the proxy listens on",
    valueHint: "host",
    default: "127.0.0.1",
    schema: listenHost,
  }),
  port: stringOption({
    description: "Port the proxy listens on (default: a free port)",
    valueHint: "port",
    schema: port,
  }),
  "endpoint-prefix": endpointPrefixOption,
  "trust-proxy-headers": trustProxyHeadersOption,
  "allowed-hosts": allowedHostsOption,
} as const;
