/**
 * mcpmgr's own upstream HTTP/1.1 client, shaped like fetch: `(url, init) => Promise<Response>`,
 * so the decorators that add mcpmgr's credentials (authenticated-fetch.ts) wrap it as they
 * wrap fetch. It exists for speed: Bun's fetch runs on its HTTP client thread, and every
 * forwarded request crossing threads twice costs more than everything else the proxy does.
 * This client runs on Bun.connect sockets in the JavaScript thread, with a keep-alive pool
 * per origin (connection.ts, pool.ts).
 *
 * What it does not do is left to fetch, unchanged: origins reached through a proxy from the
 * environment (a server's URL never holds credentials: config/url-credentials.ts), per-request TLS/proxy/unix options, following
 * redirects, and bodies other than bytes, strings and streams. It never asks for compressed
 * bodies and never decodes them: what the upstream sends is what the client gets.
 */
import { Buffer } from "node:buffer";
import { isIP } from "node:net";
import type { TLSOptions } from "bun";
import type { UpstreamFetch, UpstreamInit } from "../authenticated-fetch.ts";
import { UpstreamError } from "./errors.ts";
import { OriginPool } from "./pool.ts";
import { usesEnvironmentProxy } from "./proxy-env.ts";
import { defaultMaxHeadBytes } from "./response-parser.ts";
import { trustedCasWith } from "../../trusted-cas.ts";

export interface UpstreamClientOptions {
  /** Idle keep-alive connections kept per origin (default 64). */
  readonly maxIdlePerOrigin?: number;
  /** An idle connection is closed after this long (default 30 s; earlier if the upstream says so). */
  readonly idleTimeoutMs?: number;
  /** Time to establish a connection, TLS included (default 30 s). */
  readonly connectTimeoutMs?: number;
  /** Largest response head accepted (default 64 KiB). */
  readonly maxHeadBytes?: number;
  /** Response bodies with a Content-Length up to this are delivered whole, larger ones stream (default 64 KiB). */
  readonly wholeBodyBytes?: number;
  /** Bytes of a streamed body held for a slow reader before reading from the upstream stops (default 64 KiB). */
  readonly streamHighWaterMark?: number;
  /** Extra CA certificates (PEM) trusted for HTTPS upstreams, besides the default roots and NODE_EXTRA_CA_CERTS. */
  readonly ca?: string;
  /** Environment consulted for proxies and NODE_TLS_REJECT_UNAUTHORIZED (default process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Every origin is reached through this Unix socket (an isolated container's relay), as fetch's
   * `unix` option does; environment proxies then do not apply.
   */
  readonly unix?: string;
  /** What handles the requests this client leaves to fetch (default fetch). */
  readonly fallback?: UpstreamFetch;
}

export interface UpstreamClient {
  readonly fetch: UpstreamFetch;
  /** Closes the idle connections (connections in use close when their exchange ends). */
  close(): void;
}

interface Origin {
  readonly pool: OriginPool;
  /** The Host header: host[:port] as in the URL (default port left out). */
  readonly host: string;
}

/** Where a URL's requests go: its origin's pool, and the request target (path and query). */
interface Route {
  readonly origin: Origin;
  readonly target: string;
}

const kib = 1024;
/** Methods a request may be sent again for (RFC 9110 §9.2.2). */
const idempotent: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]);
/** fetch normalises these case-insensitively; other methods are sent as given. */
const normalised: ReadonlySet<string> = new Set(["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH"]);
const token = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** What a header value must not contain. */
const unsafeInValue = /[\r\n\0]/;
/** Characters a request target cannot carry as they are. */
const unsafeInTarget = /[^\x21-\x7e]/;
/** Options only fetch understands: such a request goes to fetch. */
const fetchOnlyOptions = ["tls", "proxy", "unix", "s3", "verbose", "session", "protocol"] as const;

export function createUpstreamClient(options: UpstreamClientOptions = {}): UpstreamClient {
  const env = options.env ?? process.env;
  const unix = options.unix;
  const fetchFallback: UpstreamFetch =
    options.fallback ??
    (unix === undefined ? (url, init) => fetch(url, init) : (url, init) => fetch(url, { ...init, unix }));
  // fetch opens its connections out of sight: the check comes before the request instead.
  const fallback: UpstreamFetch = (url, init) => {
    init.checkConnection?.(undefined);
    return fetchFallback(url, init);
  };
  const pools = new Map<string, Origin | null>();
  const poolOptions = {
    maxIdle: options.maxIdlePerOrigin ?? 64,
    idleTimeoutMs: options.idleTimeoutMs ?? 30_000,
    connectTimeoutMs: options.connectTimeoutMs ?? 30_000,
    limits: {
      maxHeadBytes: options.maxHeadBytes ?? defaultMaxHeadBytes,
      wholeBodyBytes: options.wholeBodyBytes ?? 64 * kib,
      streamHighWaterMark: options.streamHighWaterMark ?? 64 * kib,
    },
  };
  let trustedCas: string[] | undefined;

  const tlsFor = (hostname: string): TLSOptions => {
    if (options.ca !== undefined) trustedCas ??= trustedCasWith(options.ca, env);
    return {
      // SNI names a host, never an address; the certificate is then checked against the address.
      ...(isIP(hostname) === 0 ? { serverName: hostname } : {}),
      rejectUnauthorized: env.NODE_TLS_REJECT_UNAUTHORIZED !== "0",
      ...(trustedCas === undefined ? {} : { ca: trustedCas }),
    };
  };

  /** The pool for an origin, or null when fetch must handle it. */
  const originFor = (key: string): Origin | null => {
    let url: URL;
    try {
      url = new URL(key);
    } catch {
      return null; // fetch reports the bad URL its own way
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return null;
    if (unix === undefined && usesEnvironmentProxy(url, env)) return null;
    const https = url.protocol === "https:";
    const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
    const target = {
      hostname,
      port: url.port === "" ? (https ? 443 : 80) : Number(url.port),
      tls: https ? tlsFor(hostname) : undefined,
      ...(unix === undefined ? {} : { unix }),
    };
    return { pool: new OriginPool(target, poolOptions), host: url.host };
  };

  /** The origin and request target of a URL; null when fetch must handle it. */
  const routeOf = (url: string): Route | null => {
    const authority = url.indexOf("//") + 2;
    let pathAt = authority < 2 ? -1 : url.slice(authority).search(/[/?#]/);
    if (pathAt !== -1) pathAt += authority;
    const key = pathAt === -1 ? url : url.slice(0, pathAt);
    let origin = pools.get(key);
    if (origin === undefined) {
      origin = originFor(key);
      pools.set(key, origin);
    }
    if (origin === null) return null;

    let target = pathAt === -1 ? "/" : url.slice(pathAt);
    const hash = target.indexOf("#");
    if (hash !== -1) target = target.slice(0, hash);
    if (target === "" || target.charCodeAt(0) !== 0x2f) target = `/${target}`;
    if (unsafeInTarget.test(target)) {
      const parsed = new URL(url);
      target = parsed.pathname + parsed.search;
    }
    return { origin, target };
  };
  // A forwarder asks for the same URL request after request: the last one's route is kept.
  let lastUrl: string | undefined;
  let lastRoute: Route | null = null;

  const upstreamFetch: UpstreamFetch = async (url, init) => {
    if (needsFetch(init)) return fallback(url, init);
    if (url !== lastUrl) {
      lastRoute = routeOf(url);
      lastUrl = url;
    }
    const route = lastRoute;
    if (route === null) return fallback(url, init);
    const { origin, target } = route;

    const method = requestMethod(init.method);
    const prepared = requestBody(init.body, method);
    if (prepared === null) return fallback(url, init);
    // A Cancellation, when given, stands for the signal (which then only mirrors it): reading
    // `init.signal` would make the AbortSignal the Cancellation exists to spare.
    const cancel = init.cancel;
    const signal = cancel === undefined ? (init.signal ?? undefined) : undefined;
    if (cancel?.aborted) throw cancel.reason;
    if (signal?.aborted) throw signal.reason;

    const head = requestHead(method, target, origin.host, init.headers, prepared);
    const body = prepared.bytes ?? prepared.stream;
    const pool = origin.pool;
    for (let attempt = 0; ; attempt++) {
      const idle = pool.takeIdle(init.listenerPid);
      const connection = idle ?? (await pool.connect(cancel?.signal ?? signal));
      if (idle === undefined && init.checkConnection !== undefined) {
        try {
          init.checkConnection(connection.peer);
        } catch (err) {
          connection.destroy();
          throw err;
        }
      }
      if (idle === undefined) connection.listenerPid = init.listenerPid;
      try {
        return await connection.request({ method, head, body, signal, cancel });
      } catch (err) {
        const retry =
          attempt === 0 &&
          idle !== undefined &&
          err instanceof UpstreamError &&
          err.beforeResponse &&
          prepared.stream === undefined &&
          (err.nothingWritten || idempotent.has(method)) &&
          !(cancel?.aborted ?? signal?.aborted);
        if (!retry) throw err;
      }
    }
  };

  return {
    fetch: upstreamFetch,
    close() {
      for (const origin of pools.values()) origin?.pool.close();
    },
  };
}

function needsFetch(init: UpstreamInit): boolean {
  if (init.redirect !== "manual") return true; // following (or refusing) redirects is fetch's job
  const options = init as Record<string, unknown>;
  for (const name of fetchOnlyOptions) if (options[name] !== undefined) return true;
  return false;
}

function requestMethod(given: string | undefined): string {
  if (given === undefined) return "GET";
  const upper = given.toUpperCase();
  if (normalised.has(upper)) return upper;
  if (!token.test(given)) throw new TypeError(`invalid HTTP method ${JSON.stringify(given)}`);
  if (upper === "CONNECT" || upper === "TRACE" || upper === "TRACK") throw new TypeError(`forbidden method ${given}`);
  return given;
}

interface PreparedBody {
  readonly bytes?: Uint8Array;
  readonly stream?: ReadableStream<Uint8Array>;
  /** fetch's default Content-Type for a string body. */
  readonly textDefault?: boolean;
}

/** The body as bytes or a stream; null for kinds left to fetch (Blob, FormData, URLSearchParams). */
function requestBody(body: UpstreamInit["body"], method: string): PreparedBody | null {
  if (body === undefined || body === null) return {};
  if (method === "GET" || method === "HEAD") throw new TypeError(`a ${method} request cannot have a body`);
  if (typeof body === "string") return { bytes: Buffer.from(body, "utf8"), textDefault: true };
  if (body instanceof ArrayBuffer) return { bytes: new Uint8Array(body) };
  if (ArrayBuffer.isView(body)) return { bytes: new Uint8Array(body.buffer, body.byteOffset, body.byteLength) };
  if (body instanceof ReadableStream) return { stream: body as ReadableStream<Uint8Array> };
  return null;
}

/** Request line and header section. Framing and connection headers are the client's own business. */
function requestHead(
  method: string,
  target: string,
  defaultHost: string,
  given: UpstreamInit["headers"],
  body: PreparedBody,
): string {
  let fields = "";
  let host = defaultHost;
  let hasContentType = false;
  const add = (value: string, name: string) => {
    switch (name) {
      case "host":
        host = value;
        return;
      case "content-length":
      case "transfer-encoding":
      case "connection":
      case "keep-alive":
        return;
      case "content-type":
        hasContentType = true;
    }
    fields += `${name}: ${value}\r\n`;
  };
  if (given instanceof Headers) given.forEach(add);
  else if (Array.isArray(given)) {
    // Pairs as the forwarder builds them, checked as Headers would check them (no CR/LF injection).
    for (const [name, value] of given as [string, string][]) {
      if (!token.test(name) || unsafeInValue.test(value)) throw new TypeError(`invalid header ${JSON.stringify(name)}`);
      add(value, name.toLowerCase());
    }
  } else if (given !== undefined) new Headers(given).forEach(add);
  if (body.textDefault && !hasContentType) fields += "content-type: text/plain;charset=UTF-8\r\n";
  let framing = "";
  if (body.bytes !== undefined) framing = `content-length: ${body.bytes.byteLength}\r\n`;
  else if (body.stream !== undefined) framing = "transfer-encoding: chunked\r\n";
  else if (method === "POST" || method === "PUT" || method === "PATCH") framing = "content-length: 0\r\n";
  return `${method} ${target} HTTP/1.1\r\nhost: ${host}\r\n${fields}${framing}\r\n`;
}

let shared: UpstreamClient | undefined;

/** The process-wide client the forwarder uses by default (one pool per upstream origin). */
export function defaultUpstreamClient(): UpstreamClient {
  shared ??= createUpstreamClient();
  return shared;
}
