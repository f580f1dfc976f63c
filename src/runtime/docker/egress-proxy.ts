/**
 * The egress helper for `--isolate-network`: the server container sits on a Docker internal
 * network with no route out, and a helper container on both networks runs this file.
 *  - Egress: an HTTP forward proxy (CONNECT tunnels and plain-HTTP absolute-URI requests)
 *    that lets through only the destinations the config allows, never the Docker host
 *    (gateway addresses and names) unless `allowGateway`, and never `alwaysBlockedAddresses`
 *    (the helper's own loopback, cloud metadata on link-local), which no flag lifts.
 *  - Ingress (optional): a TCP relay so the host can reach an HTTP server on the internal network,
 *    listening on a TCP port or (listenPath) on a Unix socket in a directory the host bind-mounts,
 *    so only processes that may open that host directory reach the server.
 *
 * Dependency-free on purpose (only `node:` imports, nothing from the repo): the file is copied
 * alone into the helper image and run with `bun egress-proxy.ts`, configured by the JSON in
 * MCPMGR_EGRESS_CONFIG. The proxy works on raw sockets rather than node:http so bodies are
 * relayed byte-for-byte (no buffering, no re-framing) and parsing is the same under Bun and Node.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { chmodSync, rmSync } from "node:fs";
import { type AddressInfo, connect, createServer, isIP, type Server, type Socket } from "node:net";

export interface EgressConfig {
  listenPort: number;
  allowAll: boolean;
  allowHosts: string[];
  allowPorts: number[];
  blockedAddresses: string[]; // the Docker host's addresses and ranges: blocked unless allowGateway
  alwaysBlockedAddresses: string[]; // blocked whatever allowGateway says
  blockedHostNames: string[];
  allowGateway: boolean;
  ingress?: { listenPort: number; listenPath?: string; targetHost: string; targetPort: number };
}

export interface EgressOptions {
  /** Interface to listen on; "0.0.0.0" by default (the helper is reached from another container). */
  host?: string;
  /** Name resolution, injectable for tests; all addresses of the name. */
  lookup?: (host: string) => Promise<string[]>;
  log?: (line: string) => void;
}

export interface EgressProxy {
  egressPort: number;
  ingressPort?: number;
  ingressPath?: string;
  close(): Promise<void>;
}

interface Context {
  config: EgressConfig;
  lookup: (host: string) => Promise<string[]>;
  log: (line: string) => void;
  track: (socket: Socket) => void;
}

interface Target {
  method: string;
  host: string;
  port: number;
  /** The rewritten request head for plain HTTP; absent for CONNECT. */
  forwardHead?: string;
}

const ENV_NAME = "MCPMGR_EGRESS_CONFIG";
const MAX_HEAD_BYTES = 32 * 1024;
/** A client that never finishes its request head must not hold a socket forever. */
const HEAD_TIMEOUT_MS = 30_000;
const CONNECT_TIMEOUT_MS = 10_000;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Hop-by-hop headers (RFC 9110 §7.6.1) plus the proxy's own credentials, which must never reach
// the destination. Transfer-Encoding stays: the body is relayed verbatim, so its framing must too.
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "upgrade",
]);
const REASON: Record<number, string> = { 400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway" };

/**
 * Canonical form of a host name or IP address, or undefined when it is not one. The WHATWG URL
 * host parser lower-cases, applies IDNA and canonicalises odd IPv4 spellings ("2130706433",
 * "0x7f.1") so a rule cannot be dodged by spelling the same host differently.
 */
function _normalizeHost(raw: string): string | undefined {
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
    const name = _normalizeHost(suffix ? rule.slice(1) : rule);
    return name !== undefined && (host === name || (suffix && host.endsWith(`.${name}`)));
  });
}

/** An IPv4 or IPv6 address as 32 or 128 bits, for prefix comparison. */
function _isAddressRule(text: string): boolean {
  const [base = "", prefix] = text.replace(/^\[(.*)\]$/, "$1").split("/");
  const family = isIP(base);
  if (family === 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

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
  if (prefixText === undefined) return _normalizeHost(base) === address;
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
function _blockedAddress(config: EgressConfig, address: string): string | undefined {
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
  const name = _normalizeHost(host);
  if (name === undefined) return deny("invalid host");
  if (!Number.isInteger(port) || port < 1 || port > 65535) return deny("invalid port");
  if (!config.allowGateway && _matches(config.blockedHostNames, name)) return deny("blocked host name (Docker host)");
  const blocked = isIP(name) !== 0 ? _blockedAddress(config, name) : undefined;
  if (blocked) return deny(`blocked address (${blocked})`);
  const byHost = config.allowAll || config.allowHosts.length > 0;
  if (!byHost && config.allowPorts.length === 0) return deny("no egress allowed");
  if (!config.allowAll && config.allowHosts.length > 0 && !_matches(config.allowHosts, name))
    return deny("host not in allowHosts");
  if (config.allowPorts.length > 0 && !config.allowPorts.includes(port)) return deny("port not in allowPorts");
  return { allowed: true, reason: config.allowAll ? "allowAll" : byHost ? "allowHosts" : "allowPorts" };
}

function _parseHead(head: string): Target | string {
  const lines = head.split("\r\n");
  const m = /^(\S+) (\S+) (HTTP\/1\.[01])$/.exec(lines[0] ?? "");
  if (!m || !TOKEN.test(m[1] as string)) return "malformed request line";
  const [method, target, version] = [m[1] as string, m[2] as string, m[3] as string];
  const headers: [string, string][] = [];
  for (const line of lines.slice(1)) {
    // `.` stops at bare CR/LF, so header injection and obsolete line folding end up here as 400.
    const h = /^([^:]+):[ \t]*(.*?)[ \t]*$/.exec(line);
    if (!h || !TOKEN.test(h[1] as string)) return "malformed header";
    headers.push([h[1] as string, h[2] as string]);
  }
  if (method === "CONNECT") {
    const a = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(target);
    if (!a) return "malformed CONNECT authority";
    return { method, host: (a[1] ?? a[2]) as string, port: Number(a[3]) };
  }
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return "request target is not an absolute URL";
  }
  if (url.protocol !== "http:") return "only http:// URLs are forwarded (use CONNECT for https)";
  const lower = headers.map(([n]) => n.toLowerCase());
  if (lower.includes("content-length") && lower.includes("transfer-encoding"))
    return "both Content-Length and Transfer-Encoding";
  const dropped = new Set([...HOP_BY_HOP, "host"]); // Host is rebuilt from the URL (RFC 9112 §3.2.2)
  for (const [n, v] of headers) {
    if (n.toLowerCase() === "connection") for (const token of v.split(",")) dropped.add(token.trim().toLowerCase());
  }
  const kept = headers.filter(([n]) => !dropped.has(n.toLowerCase())).map(([n, v]) => `${n}: ${v}`);
  // One request per upstream connection: the client's later bytes go to the same checked
  // destination, and `Connection: close` makes the upstream end the exchange for us.
  const forwardHead = [
    `${method} ${url.pathname}${url.search} ${version}`,
    `Host: ${url.host}`,
    ...kept,
    "Connection: close",
    "",
    "",
  ].join("\r\n");
  return { method, host: url.hostname, port: url.port === "" ? 80 : Number(url.port), forwardHead };
}

function _reply(socket: Socket, status: number, body: string): void {
  if (socket.destroyed) return;
  const text = `${body}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${REASON[status]}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
  socket.resume(); // drain whatever the client still sends so its FIN closes the socket
}

/** Pipe both ways; `pipe` ends the peer when a side ends, so half-close travels through. */
function _relay(a: Socket, b: Socket, bToA: (b: Socket, a: Socket) => void = (from, to) => void from.pipe(to)): void {
  a.pipe(b);
  bToA(b, a);
  for (const [x, y] of [
    [a, b],
    [b, a],
  ] as const) {
    x.on("error", () => y.destroy());
    x.on("close", (hadError: boolean) => (hadError ? y.destroy() : y.end()));
  }
}

/**
 * Plain HTTP: the upstream's response head is passed on with `Connection: close`. A proxied
 * connection carries one request (to the destination checked for it); a keep-alive client not
 * told so would send its next request, to any host, into a socket that is about to close.
 */
function _closingResponse(upstream: Socket, client: Socket): void {
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf("\r\n\r\n");
    if (end < 0 && head.length <= MAX_HEAD_BYTES) return;
    upstream.off("data", onData);
    if (end < 0) client.write(head);
    else {
      const lines = head.subarray(0, end).toString("latin1").split("\r\n");
      const kept = lines.filter(
        (line, i) => i === 0 || !/^(connection|keep-alive|proxy-connection)[ \t]*:/i.test(line),
      );
      client.write(`${[...kept, "Connection: close"].join("\r\n")}\r\n\r\n`, "latin1");
      if (end + 4 < head.length) client.write(head.subarray(end + 4));
    }
    upstream.pipe(client);
  };
  upstream.on("data", onData);
}

/** Connects to the already-checked addresses in order; never resolves the name again. */
function _connectFirst(
  addresses: readonly string[],
  port: number,
  track: (s: Socket) => void,
): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const attempt = (i: number): void => {
      const host = addresses[i];
      if (host === undefined) return resolve(undefined);
      const socket = connect({ host, port, allowHalfOpen: true });
      track(socket);
      const fail = () => (socket.destroy(), attempt(i + 1));
      socket.setTimeout(CONNECT_TIMEOUT_MS, fail);
      socket.once("error", fail);
      socket.once("connect", () => {
        socket.setTimeout(0);
        socket.off("error", fail).on("error", () => socket.destroy());
        resolve(socket);
      });
    };
    attempt(0);
  });
}

async function _route(client: Socket, head: string, rest: Buffer, ctx: Context): Promise<void> {
  const log = (action: string, host: string | null, port: number | null, reason: string) =>
    ctx.log(JSON.stringify({ time: new Date().toISOString(), action, host, port, reason }));
  const target = _parseHead(head);
  if (typeof target === "string") return (log("deny", null, null, target), _reply(client, 400, target));
  const name = _normalizeHost(target.host) ?? target.host;
  const verdict = isDestinationAllowed(ctx.config, name, target.port);
  if (!verdict.allowed) {
    const status = verdict.reason.startsWith("invalid") ? 400 : 403;
    return (
      log("deny", name, target.port, verdict.reason), _reply(client, status, `${REASON[status]}: ${verdict.reason}`)
    );
  }
  // Resolve once and connect to exactly the addresses checked here: a second lookup could
  // return a different answer (DNS rebinding onto the Docker host).
  let addresses: string[];
  try {
    addresses = isIP(name) !== 0 ? [name] : (await ctx.lookup(name)).map((a) => _normalizeHost(a) ?? a);
  } catch {
    addresses = [];
  }
  if (addresses.length === 0)
    return (
      log("error", name, target.port, "cannot resolve host"), _reply(client, 502, "Bad Gateway: cannot resolve host")
    );
  const blocked = addresses.map((a) => _blockedAddress(ctx.config, a)).find((why) => why !== undefined);
  if (blocked)
    return (
      log("deny", name, target.port, `resolves to a blocked address (${blocked})`),
      _reply(client, 403, "Forbidden: blocked destination")
    );
  log("allow", name, target.port, verdict.reason);
  const upstream = await _connectFirst(addresses, target.port, ctx.track);
  if (!upstream)
    return (
      log("error", name, target.port, "upstream connect failed"), _reply(client, 502, "Bad Gateway: cannot connect")
    );
  if (client.destroyed) return void upstream.destroy();
  client.setTimeout(0); // tunnels may idle for long (SSE, keep-alive); the ends decide
  if (target.forwardHead === undefined) client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
  else upstream.write(target.forwardHead, "latin1");
  if (rest.length > 0) upstream.write(rest);
  _relay(client, upstream, target.forwardHead === undefined ? undefined : _closingResponse);
}

function _handleClient(client: Socket, ctx: Context): void {
  client.setTimeout(HEAD_TIMEOUT_MS, () => client.destroy());
  client.on("error", () => client.destroy());
  let head = Buffer.alloc(0);
  const onEnd = () => _reply(client, 400, "Bad Request: incomplete request");
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf("\r\n\r\n");
    if (end < 0 && head.length <= MAX_HEAD_BYTES) return;
    client.off("data", onData).off("end", onEnd).pause();
    if (end < 0 || end > MAX_HEAD_BYTES) return _reply(client, 400, "Bad Request: request head too large");
    // latin1 maps bytes 1:1, so the forwarded head is byte-identical to what the client sent.
    void _route(client, head.subarray(0, end).toString("latin1"), head.subarray(end + 4), ctx).catch(() =>
      client.destroy(),
    );
  };
  client.on("data", onData).on("end", onEnd);
}

/** Listens on a Unix socket anyone who can reach the path may connect to: access is the host directory's. */
function _listenPath(server: Server, path: string): Promise<string> {
  rmSync(path, { force: true }); // a socket left by an earlier helper blocks the bind
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => {
      server.off("error", reject);
      chmodSync(path, 0o666);
      resolve(path);
    });
  });
}

function _listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

export async function startEgressProxy(config: EgressConfig, options: EgressOptions = {}): Promise<EgressProxy> {
  const host = options.host ?? "0.0.0.0";
  const log = options.log ?? ((line: string) => console.log(line));
  const sockets = new Set<Socket>();
  const track = (s: Socket) => void (sockets.add(s), s.once("close", () => sockets.delete(s)));
  const ctx: Context = {
    config,
    lookup: options.lookup ?? (async (h) => (await dnsLookup(h, { all: true })).map((a) => a.address)),
    log,
    track,
  };
  const servers: Server[] = [];
  const close = async () => {
    for (const s of sockets) s.destroy();
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  };
  const serve = (handler: (s: Socket) => void) => {
    const server = createServer({ allowHalfOpen: true }, (s) => (track(s), handler(s)));
    server.on("error", (err) =>
      log(JSON.stringify({ time: new Date().toISOString(), action: "error", reason: err.message })),
    );
    servers.push(server);
    return server;
  };
  try {
    const egressPort = await _listen(
      serve((s) => _handleClient(s, ctx)),
      config.listenPort,
      host,
    );
    const ingress = config.ingress;
    if (!ingress) return { egressPort, close };
    const relay = serve((s) => {
      const upstream = connect({ host: ingress.targetHost, port: ingress.targetPort, allowHalfOpen: true });
      track(upstream);
      _relay(s, upstream);
    });
    if (ingress.listenPath) return { egressPort, ingressPath: await _listenPath(relay, ingress.listenPath), close };
    return { egressPort, ingressPort: await _listen(relay, ingress.listenPort, host), close };
  } catch (err) {
    await close();
    throw err;
  }
}

// ---- configuration from the environment (validated by hand: this file has no dependencies) ----

function _fail(path: string, message: string): never {
  throw new Error(`${path}: ${message}`);
}

function _object(value: unknown, path: string, keys: readonly string[]): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) _fail(path, "expected a JSON object");
  for (const key of Object.keys(value))
    if (!keys.includes(key)) _fail(`${path}.${key}`, `unknown field (expected one of ${keys.join(", ")})`);
  return value as Record<string, unknown>;
}

function _port(value: unknown, path: string, allowZero: boolean): number {
  const min = allowZero ? 0 : 1;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > 65535)
    _fail(path, `expected an integer port from ${min} to 65535`);
  return value;
}

function _socketPath(value: unknown, path: string): string {
  if (typeof value !== "string" || !value.startsWith("/") || value.length > 100)
    _fail(path, "expected an absolute path");
  return value;
}

function _boolean(value: unknown, path: string): boolean {
  if (typeof value !== "boolean") _fail(path, "expected true or false");
  return value;
}

function _strings(value: unknown, path: string, valid: (s: string) => boolean, expected: string): string[] {
  if (!Array.isArray(value)) _fail(path, `expected an array of ${expected}s`);
  return value.map((item: unknown, i) =>
    typeof item === "string" && valid(item) ? item : _fail(`${path}[${i}]`, `expected ${expected}`),
  );
}

export function configFromEnv(env: Record<string, string | undefined>): EgressConfig {
  const raw = env[ENV_NAME];
  if (raw === undefined || raw.trim() === "")
    throw new Error(`${ENV_NAME} is not set: expected the egress configuration as JSON`);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    throw new Error(`${ENV_NAME} is not valid JSON: ${(err as Error).message}`);
  }
  const keys = [
    "listenPort",
    "allowAll",
    "allowHosts",
    "allowPorts",
    "blockedAddresses",
    "alwaysBlockedAddresses",
    "blockedHostNames",
    "allowGateway",
    "ingress",
  ];
  const root = _object(value, ENV_NAME, keys);
  const at = (key: string) => `${ENV_NAME}.${key}`;
  const isHostRule = (s: string) => _normalizeHost(s.startsWith(".") ? s.slice(1) : s) !== undefined;
  const allowPorts = root.allowPorts ?? [];
  if (!Array.isArray(allowPorts)) _fail(at("allowPorts"), "expected an array of ports");
  const config: EgressConfig = {
    listenPort: _port(root.listenPort ?? 3128, at("listenPort"), true),
    allowAll: _boolean(root.allowAll ?? false, at("allowAll")),
    allowHosts: _strings(root.allowHosts ?? [], at("allowHosts"), isHostRule, "a host name, IP address or .domain"),
    allowPorts: allowPorts.map((p: unknown, i) => _port(p, `${at("allowPorts")}[${i}]`, false)),
    blockedAddresses: _strings(
      root.blockedAddresses ?? [],
      at("blockedAddresses"),
      _isAddressRule,
      "an IP address or CIDR range",
    ),
    alwaysBlockedAddresses: _strings(
      root.alwaysBlockedAddresses ?? [],
      at("alwaysBlockedAddresses"),
      _isAddressRule,
      "an IP address or CIDR range",
    ),
    blockedHostNames: _strings(root.blockedHostNames ?? [], at("blockedHostNames"), isHostRule, "a host name"),
    allowGateway: _boolean(root.allowGateway ?? false, at("allowGateway")),
  };
  if (root.ingress !== undefined) {
    const ingress = _object(root.ingress, at("ingress"), ["listenPort", "listenPath", "targetHost", "targetPort"]);
    const targetHost = ingress.targetHost;
    if (typeof targetHost !== "string" || _normalizeHost(targetHost) === undefined)
      _fail(at("ingress.targetHost"), "expected a host name or IP address");
    config.ingress = {
      listenPort: _port(ingress.listenPort ?? 0, at("ingress.listenPort"), true),
      ...(ingress.listenPath === undefined
        ? {}
        : { listenPath: _socketPath(ingress.listenPath, at("ingress.listenPath")) }),
      targetHost,
      targetPort: _port(ingress.targetPort, at("ingress.targetPort"), false),
    };
  }
  return config;
}

if (import.meta.main) {
  let config: EgressConfig;
  try {
    config = configFromEnv(process.env);
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
  const proxy = await startEgressProxy(config);
  console.log(
    JSON.stringify({
      time: new Date().toISOString(),
      action: "listening",
      egressPort: proxy.egressPort,
      ingressPort: proxy.ingressPort ?? null,
      ingressPath: proxy.ingressPath ?? null,
    }),
  );
  for (const signal of ["SIGTERM", "SIGINT"] as const)
    process.once(signal, () => void proxy.close().finally(() => process.exit(0)));
}
