/**
 * The helper's listeners: the egress proxy on a TCP port and, when configured, the ingress relay
 * (a TCP port, or a Unix socket in a directory the host bind-mounts); closing ends every socket.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { chmodSync, rmSync } from "node:fs";
import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";
import { type Context, handleClient } from "./client.ts";
import type { EgressConfig } from "./config.ts";
import { relay } from "./relay.ts";

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
      serve((s) => handleClient(s, ctx)),
      config.listenPort,
      host,
    );
    const ingress = config.ingress;
    if (!ingress) return { egressPort, close };
    const ingressServer = serve((s) => {
      const upstream = connect({ host: ingress.targetHost, port: ingress.targetPort, allowHalfOpen: true });
      track(upstream);
      relay(s, upstream);
    });
    if (ingress.listenPath)
      return { egressPort, ingressPath: await _listenPath(ingressServer, ingress.listenPath), close };
    return { egressPort, ingressPort: await _listen(ingressServer, ingress.listenPort, host), close };
  } catch (err) {
    await close();
    throw err;
  }
}
