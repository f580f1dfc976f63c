import { ipv6Spelling } from "./ip-address.ts";

/**
 * Whether a URL's host is this machine's loopback, the one place plain http:// may carry a
 * credential or decide what runs (OAuth endpoints, URLs a remote chooses, the embeddings key, a
 * custom registry and its redirects): `localhost`, an address in 127.0.0.0/8 written out in full,
 * or the IPv6 loopback however it is written (`::1`, `0:0:0:0:0:0:0:1`, an IPv4-mapped
 * `::ffff:127.0.0.1`). A name that only begins with "127." (such as 127.example.com) is a DNS name
 * like any other. Also for a listener's `--host`, which is not a URL's normalised hostname.
 */
export function isLoopbackHostname(hostname: string): boolean {
  const bare = hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  if (bare === "localhost" || bare === "::1" || /^127(?:\.\d{1,3}){3}$/.test(bare)) return true;
  return bare.includes(":") && isLoopbackIpv6(bare);
}

/** An IPv6 address in any of its spellings, normalised by the URL parser (`::ffff:7f00:1` for ::ffff:127.0.0.1). */
function isLoopbackIpv6(address: string): boolean {
  const normalised = ipv6Spelling(address);
  return normalised === "::1" || /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(normalised ?? "");
}

/** One label of a host name (RFC 1123): letters, digits and hyphens, not at either end. */
const DNS_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * The loopback address a name for it stands for, decided here and not left to the resolver:
 * `localhost` and every name below it, in any case, with or without the final dot (RFC 6761 6.3:
 * they are loopback, whatever DNS says), as 127.0.0.1; `ip6-localhost` and `ip6-loopback`, the
 * names Debian's and Ubuntu's /etc/hosts give ::1 (absent elsewhere, where the resolver found
 * nothing for them, or asked DNS), as ::1. Undefined for any other host.
 */
export function loopbackNameAddress(host: string): "127.0.0.1" | "::1" | undefined {
  const name = host.toLowerCase().replace(/\.$/, "");
  // Only a name of DNS labels: `a b.localhost` or `..localhost` is no name at all, and --host refuses it.
  if (!name.split(".").every((label) => DNS_LABEL.test(label))) return undefined;
  if (name === "localhost" || name.endsWith(".localhost")) return "127.0.0.1";
  if (name === "ip6-localhost" || name === "ip6-loopback") return "::1";
  return undefined;
}

/**
 * The address a listener given `--host` binds, which is also the one its URL names (AI clients'
 * entries, `list`, `export`, the gateway's members): a loopback name is bound as its address
 * (loopbackNameAddress). Left to the resolver, `localhost` is bound as whichever loopback /etc/hosts
 * lists first (::1 on many machines), while a client resolving the same name may try the other first,
 * where another local user can listen on the same port and receive the client's requests and tokens.
 * One address for both ends leaves no other.
 */
export function listenAddress(host: string): string {
  return loopbackNameAddress(host) ?? host;
}

/** Words of the warning below, which `run`, `start` and `restart` show from a supervisor's log. */
export const LOCALHOST_AUDIENCE_MARKER = "a name for loopback, but clients are given";

/**
 * An `--oidc-audience` naming this endpoint by a loopback name (`localhost`, loopbackNameAddress) while its URLs name the address it binds
 * (listenAddress): MCP clients ask for a token for the URL they use (RFC 8707), which many
 * authorization servers make its `aud`, so each such token would be refused. An audience written for
 * a `--host localhost` workload recorded before its URLs named 127.0.0.1 is one: its AI-client entries
 * are rewritten at its next start. Undefined when nothing is wrong.
 */
export function localhostAudienceWarning(
  audience: string | undefined,
  listenHost: string,
  endpointPath: string,
): string | undefined {
  const bound = listenAddress(listenHost);
  if (audience === undefined || (bound !== "127.0.0.1" && bound !== "::1")) return undefined;
  let url: URL;
  try {
    url = new URL(audience);
  } catch {
    return undefined; // not a URL: nothing a client's resource would be compared with
  }
  if (loopbackNameAddress(url.hostname) !== bound || url.pathname !== endpointPath) return undefined;
  const named = new URL(url.href);
  named.hostname = bound === "::1" ? "[::1]" : bound;
  return `--oidc-audience ${audience} names ${url.hostname}, ${LOCALHOST_AUDIENCE_MARKER} ${named.origin}${endpointPath}: MCP clients ask for tokens for the URL they use, which many authorization servers make the token's audience, and such tokens are refused (hint: give --oidc-audience ${named.href}, or have the authorization server issue ${audience} whatever resource is asked for)`;
}

const proxyVariables = ["http_proxy", "https_proxy", "all_proxy"];
const loopbackNoProxy = ["localhost", "127.0.0.1", "::1"];

/**
 * Adds loopback to no_proxy (both spellings) when the environment names a proxy: Bun's fetch sends
 * loopback through it otherwise, and mcpmgr's workloads, gateways and login callbacks listen there
 * (a proxy elsewhere cannot reach them; their credentials must not go to it). mcpmgr's own HTTP
 * client never proxies loopback (proxy/upstream/proxy-env.ts); Bun reads no_proxy at each request.
 */
export function keepLoopbackOffEnvironmentProxy(env: Record<string, string | undefined>): void {
  const set = (name: string) => (env[name] ?? env[name.toUpperCase()] ?? "").trim() !== "";
  if (!proxyVariables.some(set)) return;
  // Both spellings' entries: which one fetch prefers when they differ is not something to rely on.
  const listed = [...new Set(`${env.no_proxy ?? ""},${env.NO_PROXY ?? ""}`.split(/[\s,]+/))].filter((e) => e !== "");
  if (listed.includes("*")) return;
  const missing = loopbackNoProxy.filter((host) => !listed.includes(host));
  const value = [...listed, ...missing].join(",");
  if (env.no_proxy === value && env.NO_PROXY === value) return;
  env.no_proxy = value;
  env.NO_PROXY = value;
}
