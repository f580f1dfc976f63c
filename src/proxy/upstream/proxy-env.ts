/**
 * Whether fetch would send a request through an HTTP proxy from the environment
 * (http_proxy, https_proxy, all_proxy, less the hosts in no_proxy). The upstream client
 * does not speak to proxies itself: such origins are left to fetch, which does.
 * Loopback is never proxied (as Go's net/http does): mcpmgr's workloads, gateways and login
 * callbacks listen there, which a proxy elsewhere cannot reach, and their credentials (a gateway
 * key, a forwarded token) must not go to it. Bun's fetch proxies loopback too unless no_proxy
 * names it, hence `keepLoopbackOffEnvironmentProxy` (config/loopback.ts) at start-up.
 */
import { isLoopbackHostname } from "../../config/loopback.ts";

type Environment = Readonly<Record<string, string | undefined>>;

function variable(env: Environment, name: string): string | undefined {
  const value = env[name] ?? env[name.toUpperCase()];
  return value === undefined || value.trim() === "" ? undefined : value;
}

export function usesEnvironmentProxy(url: URL, env: Environment): boolean {
  const proxy =
    (url.protocol === "https:" ? variable(env, "https_proxy") : variable(env, "http_proxy")) ??
    variable(env, "all_proxy");
  if (proxy === undefined) return false;
  if (isLoopbackHostname(url.hostname)) return false;
  return !excludedByNoProxy(url, variable(env, "no_proxy"));
}

/** no_proxy: comma- or space-separated hosts (a leading "." or "*." covers subdomains), host:port, or "*". */
function excludedByNoProxy(url: URL, noProxy: string | undefined): boolean {
  if (noProxy === undefined) return false;
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  for (const raw of noProxy.split(/[\s,]+/)) {
    let entry = raw.trim().toLowerCase();
    if (entry === "") continue;
    if (entry === "*") return true;
    const portAt = entry.lastIndexOf(":");
    if (portAt > 0 && !entry.includes("]") && entry.indexOf(":") === portAt) {
      if (entry.slice(portAt + 1) !== port) continue;
      entry = entry.slice(0, portAt);
    }
    entry = entry.replace(/^\[|\]$/g, "").replace(/^\*?\./, "");
    if (host === entry || host.endsWith(`.${entry}`)) return true;
  }
  return false;
}
