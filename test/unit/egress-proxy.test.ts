/**
 * The egress helper of `--isolate-network`, on real loopback sockets: an HTTP upstream that
 * reports what it received, a TCP echo server, and proxies with different allow rules. Names
 * such as api.example.test resolve to 127.0.0.1 through the injected lookup.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";
import type { EgressConfig } from "../../src/runtime/docker/egress/config.ts";
import { configFromEnv } from "../../src/runtime/docker/egress/config-from-env.ts";
import { isDestinationAllowed } from "../../src/runtime/docker/egress/host-rules.ts";
import { startEgressProxy } from "../../src/runtime/docker/egress/server.ts";
import { EGRESS_ENTRY, EGRESS_SOURCES } from "../../src/runtime/docker/egress-sources.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const SECRET = "c2VjcmV0LXByb3h5LXBhc3N3b3Jk";
let upstream: ReturnType<typeof Bun.serve>;
let echo: Server;
let echoPort: number;
let closedPort: number;

const base: EgressConfig = {
  listenPort: 0,
  allowAll: false,
  allowHosts: [],
  allowPorts: [],
  blockedAddresses: [],
  alwaysBlockedAddresses: [],
  blockedHostNames: [],
  allowGateway: false,
};

async function lookup(host: string): Promise<string[]> {
  if (host.endsWith(".test") || host === "localhost") return ["127.0.0.1"];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
}

/** Starts a proxy, runs `fn` against its ports, and returns the log lines. */
async function withProxy(
  config: Partial<EgressConfig>,
  fn: (ports: { egress: number; ingress?: number }) => Promise<void>,
): Promise<string[]> {
  const lines: string[] = [];
  const proxy = await startEgressProxy(
    { ...base, ...config },
    { host: "127.0.0.1", lookup, log: (l) => lines.push(l) },
  );
  try {
    await fn({ egress: proxy.egressPort, ...(proxy.ingressPort === undefined ? {} : { ingress: proxy.ingressPort }) });
  } finally {
    await proxy.close();
  }
  return lines;
}

/** A raw client: write, collect until the other side closes. */
function exchange(port: number, data: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    let received = "";
    socket.on("data", (c) => (received += c.toString("latin1")));
    socket.on("error", reject);
    socket.on("close", () => resolve(received));
    socket.on("connect", () => socket.write(data));
    setTimeout(() => socket.destroy(), 5000).unref();
  });
}

/** Reads from the socket until `done(received)` holds. */
function readUntil(socket: Socket, done: (s: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = "";
    const onData = (c: Buffer) => {
      received += c.toString("latin1");
      if (done(received)) socket.off("data", onData), resolve(received);
    };
    socket.on("data", onData).once("error", reject);
    socket.once("end", () => resolve(received));
  });
}

async function openTunnel(port: number, authority: string): Promise<{ socket: Socket; head: string }> {
  const socket = connect({ host: "127.0.0.1", port });
  await new Promise((r) => socket.once("connect", r));
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\nProxy-Authorization: Basic ${SECRET}\r\n\r\n`);
  const head = await readUntil(socket, (s) => s.includes("\r\n\r\n"));
  return { socket, head };
}

async function connectStatus(port: number, authority: string): Promise<string> {
  const { socket, head } = await openTunnel(port, authority);
  socket.destroy();
  return head.split("\r\n")[0] as string;
}

beforeAll(async () => {
  upstream = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const body = await req.text();
      return Response.json({ method: req.method, url: req.url, headers: Object.fromEntries(req.headers), body });
    },
  });
  echo = createServer({ allowHalfOpen: true }, (s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", r));
  echoPort = (echo.address() as AddressInfo).port;
  const spare = createServer();
  await new Promise<void>((r) => spare.listen(0, "127.0.0.1", r));
  closedPort = (spare.address() as AddressInfo).port;
  await new Promise((r) => spare.close(r));
});

afterAll(async () => {
  await upstream.stop(true);
  await new Promise((r) => echo.close(r));
});

describe("isDestinationAllowed", () => {
  test("hosts, .domain suffixes, case, trailing dots and brackets", () => {
    const config = { ...base, allowHosts: ["API.example.com", ".example.org", "10.0.0.1", "[::1]"] };
    expect(isDestinationAllowed(config, "api.EXAMPLE.com.", 443).allowed).toBe(true);
    expect(isDestinationAllowed(config, "other.example.com", 443).allowed).toBe(false);
    expect(isDestinationAllowed(config, "example.org", 443).allowed).toBe(true);
    expect(isDestinationAllowed(config, "a.b.example.org", 80).allowed).toBe(true);
    expect(isDestinationAllowed(config, "badexample.org", 80).allowed).toBe(false);
    expect(isDestinationAllowed(config, "10.0.0.1", 80).allowed).toBe(true);
    expect(isDestinationAllowed(config, "::1", 80).allowed).toBe(true);
    expect(isDestinationAllowed(config, "[0:0:0:0:0:0:0:1]", 80).allowed).toBe(true);
  });

  test("ports, the nothing-allowed default and ports-only rules", () => {
    expect(isDestinationAllowed(base, "example.com", 443)).toEqual({ allowed: false, reason: "no egress allowed" });
    const portsOnly = { ...base, allowPorts: [443] };
    expect(isDestinationAllowed(portsOnly, "anything.example", 443).allowed).toBe(true);
    expect(isDestinationAllowed(portsOnly, "anything.example", 80).allowed).toBe(false);
    const both = { ...base, allowHosts: ["example.com"], allowPorts: [443] };
    expect(isDestinationAllowed(both, "example.com", 443).allowed).toBe(true);
    expect(isDestinationAllowed(both, "example.com", 22).reason).toBe("port not in allowPorts");
    expect(isDestinationAllowed({ ...base, allowAll: true }, "example.com", 0).allowed).toBe(false);
  });

  test("the Docker host is refused even with allowAll, by name or by any spelling of its address", () => {
    const config = {
      ...base,
      allowAll: true,
      blockedAddresses: ["172.17.0.1", "127.0.0.1"],
      blockedHostNames: ["host.docker.internal"],
    };
    expect(isDestinationAllowed(config, "HOST.docker.internal.", 80).allowed).toBe(false);
    expect(isDestinationAllowed(config, "172.17.0.1", 80).allowed).toBe(false);
    expect(isDestinationAllowed(config, "::ffff:172.17.0.1", 80).allowed).toBe(false);
    expect(isDestinationAllowed(config, "2130706433", 80).allowed).toBe(false); // 127.0.0.1 as one number
    expect(isDestinationAllowed(config, "example.com", 80).allowed).toBe(true);
    expect(isDestinationAllowed({ ...config, allowGateway: true }, "172.17.0.1", 80).allowed).toBe(true);
  });
});

describe("egress proxy", () => {
  test("CONNECT to an allowed host:port tunnels bytes both ways and carries the half-close", async () => {
    const log = await withProxy({ allowHosts: [".example.test"], allowPorts: [echoPort] }, async ({ egress }) => {
      const { socket, head } = await openTunnel(egress, `api.example.test:${echoPort}`);
      expect(head).toStartWith("HTTP/1.1 200");
      const back = readUntil(socket, (s) => s === "ping over the tunnel");
      socket.write("ping over the tunnel");
      expect(await back).toBe("ping over the tunnel");
      const closed = new Promise((r) => socket.once("close", r));
      socket.end(); // the echo server ends its side in turn, through the proxy
      await closed;
    });
    const decision = JSON.parse(log[0] as string);
    expect(decision).toMatchObject({ action: "allow", host: "api.example.test", port: echoPort, reason: "allowHosts" });
    expect(typeof decision.time).toBe("string");
  });

  test("bytes sent right behind the CONNECT head reach the target; the name is resolved once", async () => {
    let lookups = 0;
    const proxy = await startEgressProxy(
      { ...base, allowAll: true, blockedAddresses: ["10.9.9.9"] },
      { host: "127.0.0.1", lookup: async () => (++lookups === 1 ? ["127.0.0.1"] : ["10.9.9.9"]), log: () => {} },
    );
    try {
      const socket = connect({ host: "127.0.0.1", port: proxy.egressPort });
      const all = readUntil(socket, (s) => s.endsWith("early bytes"));
      socket.write(`CONNECT rebind.test:${echoPort} HTTP/1.1\r\n\r\nearly bytes`);
      expect(await all).toBe("HTTP/1.1 200 Connection Established\r\n\r\nearly bytes");
      socket.destroy();
      expect(lookups).toBe(1);
    } finally {
      await proxy.close();
    }
  });

  test("destinations outside the rules get 403: other host, other port, suffix without the dot", async () => {
    const log = await withProxy({ allowHosts: [".example.test"], allowPorts: [echoPort] }, async ({ egress }) => {
      expect(await connectStatus(egress, `other.test:${echoPort}`)).toBe("HTTP/1.1 403 Forbidden");
      expect(await connectStatus(egress, `api.example.test:${closedPort}`)).toBe("HTTP/1.1 403 Forbidden");
      expect(await connectStatus(egress, `badexample.test:${echoPort}`)).toBe("HTTP/1.1 403 Forbidden");
      expect(await connectStatus(egress, `example.test:${echoPort}`)).toBe("HTTP/1.1 200 Connection Established");
      const denied = await exchange(
        egress,
        `GET http://other.test:${upstream.port}/x HTTP/1.1\r\nHost: other.test\r\n\r\n`,
      );
      expect(denied).toStartWith("HTTP/1.1 403 Forbidden");
    });
    expect(log.map((l) => JSON.parse(l).reason)).toContain("port not in allowPorts");
    expect(log.map((l) => JSON.parse(l).reason)).toContain("host not in allowHosts");
  });

  test("plain HTTP is forwarded in origin form, streaming the body, without the proxy's credentials", async () => {
    const log = await withProxy({ allowHosts: ["127.0.0.1"] }, async ({ egress }) => {
      const body = "x".repeat(100_000);
      const raw = await exchange(
        egress,
        `POST http://127.0.0.1:${upstream.port}/echo?q=1 HTTP/1.1\r\nHost: wrong.example\r\nProxy-Authorization: Basic ${SECRET}\r\n` +
          `Proxy-Connection: keep-alive\r\nConnection: keep-alive, X-Hop\r\nX-Hop: drop me\r\nX-Kept: yes\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      expect(raw).toStartWith("HTTP/1.1 200");
      const seen = JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4));
      expect(seen.method).toBe("POST");
      expect(seen.url).toBe(`http://127.0.0.1:${upstream.port}/echo?q=1`);
      expect(seen.body.length).toBe(body.length);
      expect(seen.headers.host).toBe(`127.0.0.1:${upstream.port}`);
      expect(seen.headers["x-kept"]).toBe("yes");
      for (const name of ["proxy-authorization", "proxy-connection", "x-hop"])
        expect(seen.headers[name]).toBeUndefined();
      expect(JSON.stringify(seen)).not.toContain(SECRET);
    });
    expect(log.join("\n")).not.toContain(SECRET);
  });

  test("plain HTTP: the client is told the connection closes, so a keep-alive client's next request is checked anew", async () => {
    await withProxy({ allowHosts: ["api.example.test"], blockedAddresses: [] }, async ({ egress }) => {
      const raw = await exchange(
        egress,
        `GET http://api.example.test:${upstream.port}/one HTTP/1.1\r\nHost: api.example.test:${upstream.port}\r\nConnection: keep-alive\r\n\r\n`,
      );
      const headLines = raw.slice(0, raw.indexOf("\r\n\r\n")).split("\r\n");
      expect(headLines[0]).toStartWith("HTTP/1.1 200");
      expect(headLines.filter((line) => /^connection:/i.test(line))).toEqual(["Connection: close"]);
      expect(headLines.some((line) => /^keep-alive:/i.test(line))).toBe(false);
      // Node's keep-alive agent, as a server in the container would use it: the second request
      // (to a host the rules refuse) gets its own connection and its own verdict.
      const { request, Agent } = await import("node:http");
      const agent = new Agent({ keepAlive: true });
      const get = (url: string) =>
        new Promise<string>((resolve, reject) => {
          const target = new URL(url);
          const req = request(
            { host: "127.0.0.1", port: egress, path: url, headers: { host: target.host }, agent },
            (res) => {
              res.resume();
              res.on("end", () => resolve(String(res.statusCode)));
            },
          );
          req.on("error", reject);
          req.end();
        });
      expect(await get(`http://api.example.test:${upstream.port}/one`)).toBe("200");
      expect(await get(`http://other.example.test:${upstream.port}/two`)).toBe("403");
      agent.destroy();
    });
  });

  test("a real client (fetch with a proxy URL carrying credentials) goes through", async () => {
    const log = await withProxy({ allowHosts: [".example.test"] }, async ({ egress }) => {
      const res = await fetch(`http://api.example.test:${upstream.port}/via-fetch`, {
        proxy: `http://user:${SECRET}@127.0.0.1:${egress}`,
      });
      expect(res.status).toBe(200);
      const seen = (await res.json()) as { url: string; headers: Record<string, string> };
      expect(seen.url).toEndWith("/via-fetch");
      expect(seen.headers["proxy-authorization"]).toBeUndefined();
    });
    expect(log).toHaveLength(1);
    expect(log.join("\n")).not.toContain(SECRET);
  });

  test("the Docker host is refused even with allowAll, unless allowGateway", async () => {
    const blocked = { allowAll: true, blockedAddresses: ["127.0.0.1"], blockedHostNames: ["host.docker.internal"] };
    const log = await withProxy(blocked, async ({ egress }) => {
      expect(await connectStatus(egress, `api.example.test:${echoPort}`)).toBe("HTTP/1.1 403 Forbidden"); // resolves to it
      expect(await connectStatus(egress, `127.0.0.1:${echoPort}`)).toBe("HTTP/1.1 403 Forbidden");
      expect(await connectStatus(egress, `[::ffff:127.0.0.1]:${echoPort}`)).toBe("HTTP/1.1 403 Forbidden");
      expect(await connectStatus(egress, `HOST.docker.internal.:${echoPort}`)).toBe("HTTP/1.1 403 Forbidden");
    });
    expect(log.every((l) => JSON.parse(l).action === "deny")).toBe(true);
    expect(log.map((l) => JSON.parse(l).reason)).toContain("resolves to a blocked address (Docker host)");
    await withProxy({ ...blocked, allowGateway: true }, async ({ egress }) => {
      expect(await connectStatus(egress, `api.example.test:${echoPort}`)).toBe("HTTP/1.1 200 Connection Established");
    });
  });

  test("allowGateway does not open the always-blocked ranges, by name, literal or mapped spelling", async () => {
    const config = {
      allowAll: true,
      allowGateway: true,
      blockedAddresses: ["127.0.0.1"],
      alwaysBlockedAddresses: ["127.0.0.0/8"],
    };
    const log = await withProxy(config, async ({ egress }) => {
      expect(await connectStatus(egress, `api.example.test:${echoPort}`)).toBe("HTTP/1.1 403 Forbidden"); // resolves to 127.0.0.1
      expect(await connectStatus(egress, `127.0.0.1:${echoPort}`)).toBe("HTTP/1.1 403 Forbidden");
      expect(await connectStatus(egress, `[::ffff:127.0.0.1]:${echoPort}`)).toBe("HTTP/1.1 403 Forbidden");
      const plain = await exchange(egress, `GET http://127.0.0.1:${upstream.port}/ HTTP/1.1\r\n\r\n`);
      expect(plain).toStartWith("HTTP/1.1 403 Forbidden");
    });
    expect(log.every((l) => JSON.parse(l).action === "deny")).toBe(true);
    expect(log.map((l) => JSON.parse(l).reason)).toContain(
      "resolves to a blocked address (loopback, link-local, unspecified or cloud metadata)",
    );
  });

  test("malformed requests get 400 and the proxy keeps serving; unreachable upstreams get 502", async () => {
    const log = await withProxy({ allowAll: true }, async ({ egress }) => {
      expect(await exchange(egress, "NONSENSE\r\n\r\n")).toStartWith("HTTP/1.1 400");
      expect(await exchange(egress, "GET /relative HTTP/1.1\r\nHost: x\r\n\r\n")).toStartWith("HTTP/1.1 400");
      expect(await exchange(egress, "CONNECT no-port HTTP/1.1\r\n\r\n")).toStartWith("HTTP/1.1 400");
      expect(await exchange(egress, "CONNECT a b:443 HTTP/1.1\r\n\r\n")).toStartWith("HTTP/1.1 400");
      expect(await exchange(egress, "GET http://x.test/ HTTP/1.1\r\nBad Header\r\n\r\n")).toStartWith("HTTP/1.1 400");
      expect(await exchange(egress, Buffer.from([0, 1, 2, 255, 13, 10, 13, 10]))).toStartWith("HTTP/1.1 400");
      expect(await exchange(egress, `GET http://x.test/ HTTP/1.1\r\nX: ${"a".repeat(40_000)}`)).toStartWith(
        "HTTP/1.1 400",
      );
      expect(await connectStatus(egress, `127.0.0.1:${closedPort}`)).toBe("HTTP/1.1 502 Bad Gateway");
      expect(await connectStatus(egress, `unknown.invalid:443`)).toBe("HTTP/1.1 502 Bad Gateway");
      expect(await connectStatus(egress, `127.0.0.1:${echoPort}`)).toBe("HTTP/1.1 200 Connection Established");
    });
    expect(log.map((l) => JSON.parse(l).action)).toContain("error");
  });

  test("the ingress relay pipes to the target and carries the half-close", async () => {
    await withProxy(
      { ingress: { listenPort: 0, targetHost: "127.0.0.1", targetPort: echoPort } },
      async ({ ingress }) => {
        expect(ingress).toBeNumber();
        const socket = connect({ host: "127.0.0.1", port: ingress as number });
        await new Promise((r) => socket.once("connect", r));
        const all = readUntil(socket, () => false); // resolves on the relayed FIN
        socket.write("through the relay");
        socket.end();
        expect(await all).toBe("through the relay");
      },
    );
  });

  test("the ingress relay drops the client when the target is unreachable", async () => {
    await withProxy(
      { ingress: { listenPort: 0, targetHost: "127.0.0.1", targetPort: closedPort } },
      async ({ ingress }) => {
        const socket = connect({ host: "127.0.0.1", port: ingress as number });
        socket.on("error", () => {}); // a reset is as good as a close here
        socket.write("hello");
        await new Promise((r) => socket.once("close", r));
        expect(socket.bytesRead).toBe(0);
      },
    );
  });
});

describe("configFromEnv", () => {
  const env = (value: unknown) => ({ MCPMGR_EGRESS_CONFIG: typeof value === "string" ? value : JSON.stringify(value) });

  test("fills defaults and keeps the rules", () => {
    expect(configFromEnv(env({ allowHosts: [".example.com"], allowPorts: [443] }))).toEqual({
      ...base,
      listenPort: 3128,
      allowHosts: [".example.com"],
      allowPorts: [443],
    });
    const ingress = { listenPort: 8080, targetHost: "server", targetPort: 3000 };
    expect(configFromEnv(env({ allowAll: true, ingress })).ingress).toEqual(ingress);
  });

  test("rejects a missing variable, bad JSON and wrong types with the field's path", () => {
    expect(() => configFromEnv({})).toThrow("MCPMGR_EGRESS_CONFIG is not set");
    expect(() => configFromEnv(env("{nope"))).toThrow("MCPMGR_EGRESS_CONFIG is not valid JSON");
    expect(() => configFromEnv(env([]))).toThrow("MCPMGR_EGRESS_CONFIG: expected a JSON object");
    expect(() => configFromEnv(env({ allowAll: "yes" }))).toThrow(
      "MCPMGR_EGRESS_CONFIG.allowAll: expected true or false",
    );
    expect(() => configFromEnv(env({ allowHosts: "a.com" }))).toThrow(
      "MCPMGR_EGRESS_CONFIG.allowHosts: expected an array",
    );
    expect(() => configFromEnv(env({ allowHosts: ["ok.com", 3] }))).toThrow(
      "MCPMGR_EGRESS_CONFIG.allowHosts[1]: expected",
    );
    expect(() => configFromEnv(env({ allowPorts: [443, 70000] }))).toThrow(
      "MCPMGR_EGRESS_CONFIG.allowPorts[1]: expected an integer port",
    );
    expect(() => configFromEnv(env({ listenPort: 1.5 }))).toThrow(
      "MCPMGR_EGRESS_CONFIG.listenPort: expected an integer port",
    );
    expect(() => configFromEnv(env({ blockedAddresses: ["gateway"] }))).toThrow(
      "MCPMGR_EGRESS_CONFIG.blockedAddresses[0]: expected an IP address",
    );
    expect(() => configFromEnv(env({ alowAll: true }))).toThrow("MCPMGR_EGRESS_CONFIG.alowAll: unknown field");
    expect(() => configFromEnv(env({ ingress: { listenPort: 1 } }))).toThrow(
      "MCPMGR_EGRESS_CONFIG.ingress.targetHost: expected",
    );
    expect(() => configFromEnv(env({ ingress: { listenPort: 1, targetHost: "s", targetPort: 0 } }))).toThrow(
      "MCPMGR_EGRESS_CONFIG.ingress.targetPort: expected an integer port",
    );
  });
});

describe("standalone entry point", () => {
  test("runs from the image's files alone, logs listening, serves, and exits 0 on SIGTERM; a bad config exits 2", async () => {
    const dir = mkdtempSync(join(tmpdir(), "egress-"));
    try {
      // Exactly what the image gets (egress-sources.ts), nothing else of the repository.
      for (const { path, content } of EGRESS_SOURCES) {
        mkdirSync(dirname(join(dir, path)), { recursive: true });
        writeFileSync(join(dir, path), content);
      }
      const file = join(dir, EGRESS_ENTRY);
      const bad = Bun.spawn([process.execPath, file], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? "" },
        stdout: "pipe",
        stderr: "pipe",
      });
      expect(await bad.exited).toBe(2);
      expect(await new Response(bad.stderr).text()).toContain("MCPMGR_EGRESS_CONFIG is not set");

      const config = { listenPort: 0, allowHosts: ["127.0.0.1"] };
      const proc = Bun.spawn([process.execPath, file], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? "", MCPMGR_EGRESS_CONFIG: JSON.stringify(config) },
        stdout: "pipe",
        stderr: "pipe",
      });
      const reader = proc.stdout.getReader();
      let out = "";
      while (!out.includes("\n")) {
        const { value, done } = await reader.read();
        if (done) break;
        out += new TextDecoder().decode(value);
      }
      const ready = JSON.parse(out.split("\n")[0] as string);
      expect(ready.action).toBe("listening");
      const raw = await exchange(ready.egressPort, `GET http://127.0.0.1:${upstream.port}/standalone HTTP/1.1\r\n\r\n`);
      expect(raw).toStartWith("HTTP/1.1 200");
      proc.kill("SIGTERM");
      expect(await proc.exited).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("blocked address ranges", () => {
  const ranges: EgressConfig = {
    ...base,
    allowAll: true,
    blockedAddresses: ["192.168.5.1", "172.30.0.0/16"],
    alwaysBlockedAddresses: ["127.0.0.0/8", "169.254.0.0/16", "::1/128", "::/128", "fe80::/10", "0.0.0.0/8"],
  };
  const always = [
    "127.0.0.1",
    "127.9.9.9",
    "169.254.169.254",
    "[::1]",
    "[::]",
    "[fe80::1]",
    "0.0.0.0",
    "[::ffff:169.254.169.254]",
  ];

  test("CIDR rules block every address inside them, for IP literals; allowGateway lifts only the host's addresses", () => {
    for (const host of [...always, "192.168.5.1", "172.30.9.9"])
      expect(isDestinationAllowed(ranges, host, 80).allowed).toBe(false);
    for (const host of ["10.0.0.1", "192.168.5.2", "[2001:db8::1]", "169.255.0.1"])
      expect(isDestinationAllowed(ranges, host, 80).allowed).toBe(true);
    const lifted = { ...ranges, allowGateway: true };
    for (const host of ["192.168.5.1", "172.30.9.9"]) expect(isDestinationAllowed(lifted, host, 80).allowed).toBe(true);
    for (const host of always)
      expect(isDestinationAllowed(lifted, host, 80)).toEqual({
        allowed: false,
        reason: "blocked address (loopback, link-local, unspecified or cloud metadata)",
      });
  });

  test("configFromEnv accepts CIDR ranges and refuses malformed ones", () => {
    const env = (blockedAddresses: unknown) => ({
      MCPMGR_EGRESS_CONFIG: JSON.stringify({ allowAll: true, blockedAddresses }),
    });
    expect(configFromEnv(env(["10.0.0.0/8", "fe80::/10"])).blockedAddresses).toEqual(["10.0.0.0/8", "fe80::/10"]);
    for (const bad of [["10.0.0.0/33"], ["10.0.0.0/x"], ["not-an-ip/8"]])
      expect(() => configFromEnv(env(bad))).toThrow("blockedAddresses");
    const always = (alwaysBlockedAddresses: unknown) => ({
      MCPMGR_EGRESS_CONFIG: JSON.stringify({ alwaysBlockedAddresses }),
    });
    expect(configFromEnv(always(["127.0.0.0/8", "::/128"])).alwaysBlockedAddresses).toEqual(["127.0.0.0/8", "::/128"]);
    expect(() => configFromEnv(always(["metadata"]))).toThrow(
      "MCPMGR_EGRESS_CONFIG.alwaysBlockedAddresses[0]: expected an IP address",
    );
  });
});

describe("isPrivateAddress (inside-network detection for URLs others choose)", async () => {
  const { isPrivateAddress } = await import("../../src/auth/addresses.ts");
  test("IPv4 ranges and the IPv6 forms that embed them", () => {
    for (const inside of [
      "127.0.0.1",
      "10.1.2.3",
      "172.20.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "198.18.0.1",
      "224.0.0.1",
      "::1",
      "::",
      "::ffff:127.0.0.1",
      "::ffff:a9fe:a9fe",
      "64:ff9b::a9fe:a9fe",
      "2002:a9fe:a9fe::1",
      "fc00::1",
      "fe80::1",
      "ff02::1",
      "[::1]",
    ]) {
      expect(isPrivateAddress(inside)).toBe(true);
    }
    for (const outside of [
      "8.8.8.8",
      "1.1.1.1",
      "172.32.0.1",
      "2001:4860:4860::8888",
      "::ffff:8.8.8.8",
      "2002:0808:0808::1",
    ]) {
      expect(isPrivateAddress(outside)).toBe(false);
    }
  });
});
