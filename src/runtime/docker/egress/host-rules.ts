/**
 * Which destinations the helper lets through: host names and addresses in one canonical spelling
 * (so a rule cannot be dodged by another spelling), allow rules by name or `.domain`, address and
 * CIDR blocks, and the name-level decision.
 */
import { isIP } from "node:net";
import type { EgressConfig } from "./config.ts";

/**
 * Canonical form of a host name or IP address, or undefined when it is not one. The WHATWG URL
 * host parser lower-cases, applies IDNA and canonicalises odd IPv4 spellings ("2130706433",
 * "0x7f.1") so a rule cannot be dodged by spelling the same host differently.
 */
export function normalizeHost(raw: string): string | undefined {
  let host = raw.trim();
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  try {
    if (isIP(host) === 6) return _unmapIPv4(new URL(`http://[${host}]/`).hostname.slice(1, -1));
    if (host === "" || /[\s/\\@?#%:[\]]/.test(host)) return undefined;
    host = new URL(`http://${host}/`).hostname.replace(/\.$/, "");
    return host === "" ? undefined : host;
  } catch {
    return undefined;
  }
}

/** `::ffff:a.b.c.d` reaches the IPv4 host, so it must match IPv4 rules. */
function _unmapIPv4(ip: string): string {
  const m = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(ip);
  if (!m) return ip;
  const [hi, lo] = [parseInt(m[1] as string, 16), parseInt(m[2] as string, 16)];
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Exact names/addresses, or `.example.com` for the domain and all its subdomains. */
function _matches(rules: readonly string[], host: string): boolean {
  return rules.some((rule) => {
    const suffix = rule.startsWith(".");
    const name = normalizeHost(suffix ? rule.slice(1) : rule);
    return name !== undefined && (host === name || (suffix && host.endsWith(`.${name}`)));
  });
}

/** Whether `text` is an IPv4 or IPv6 address, or a CIDR range of one (`a.b.c.d/n`, `[v6]/n`). */
export function isAddressRule(text: string): boolean {
  const [base = "", prefix] = text.replace(/^\[(.*)\]$/, "$1").split("/");
  const family = isIP(base);
  if (family === 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/** An IPv4 or IPv6 address as 32 or 128 bits, for prefix comparison. */
function _bits(address: string): bigint | undefined {
  if (isIP(address) === 4) return address.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
  if (isIP(address) !== 6) return undefined;
  const [head = "", tail = ""] = address.toLowerCase().split("::");
  const groups = (text: string) => (text === "" ? [] : text.split(":"));
  const left = groups(head);
  const right = groups(tail);
  const all = address.includes("::") ? [...left, ...Array(8 - left.length - right.length).fill("0"), ...right] : left;
  return all.reduce((acc, group) => (acc << 16n) | BigInt(Number.parseInt(group, 16) || 0), 0n);
}

/** Whether `address` is `rule` (an address) or inside it (an address/prefix CIDR). */
function _inRule(rule: string, address: string): boolean {
  const [base = "", prefixText] = rule.split("/");
  if (prefixText === undefined) return normalizeHost(base) === address;
  const family = isIP(base);
  if (family === 0 || family !== isIP(address)) return false;
  const width = family === 4 ? 32n : 128n;
  const prefix = BigInt(Number(prefixText));
  const a = _bits(base);
  const b = _bits(address);
  if (a === undefined || b === undefined) return false;
  const shift = width - prefix;
  return a >> shift === b >> shift;
}

/** Why the address may not be reached, or undefined when it may. */
export function blockedAddress(config: EgressConfig, address: string): string | undefined {
  if (config.alwaysBlockedAddresses.some((rule) => _inRule(rule, address)))
    return "loopback, link-local, unspecified or cloud metadata";
  if (!config.allowGateway && config.blockedAddresses.some((rule) => _inRule(rule, address))) return "Docker host";
  return undefined;
}

/** The name-level decision (no DNS); the resolved addresses are checked by the proxy itself. */
export function isDestinationAllowed(
  config: EgressConfig,
  host: string,
  port: number,
): { allowed: boolean; reason: string } {
  const deny = (reason: string) => ({ allowed: false, reason });
  const name = normalizeHost(host);
  if (name === undefined) return deny("invalid host");
  if (!Number.isInteger(port) || port < 1 || port > 65535) return deny("invalid port");
  if (!config.allowGateway && _matches(config.blockedHostNames, name)) return deny("blocked host name (Docker host)");
  const blocked = isIP(name) !== 0 ? blockedAddress(config, name) : undefined;
  if (blocked) return deny(`blocked address (${blocked})`);
  const byHost = config.allowAll || config.allowHosts.length > 0;
  if (!byHost && config.allowPorts.length === 0) return deny("no egress allowed");
  if (!config.allowAll && config.allowHosts.length > 0 && !_matches(config.allowHosts, name))
    return deny("host not in allowHosts");
  if (config.allowPorts.length > 0 && !config.allowPorts.includes(port)) return deny("port not in allowPorts");
  return { allowed: true, reason: config.allowAll ? "allowAll" : byHost ? "allowHosts" : "allowPorts" };
}
