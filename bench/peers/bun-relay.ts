/**
 * The "Bun relay" peer of `bun run bench`: a TCP relay on Bun.listen and Bun.connect, one
 * upstream connection per client connection, bytes passed through as they arrive (no HTTP
 * parsing, no objects per request, no checks). It is the floor of any proxy written in
 * JavaScript on Bun's sockets on this machine: what it costs is the system calls and Bun's
 * socket callbacks; everything an HTTP proxy does per request comes on top (issue 15).
 *
 * Usage: bun bench/peers/bun-relay.ts --target http://127.0.0.1:PORT/mcp [--port N]
 * Prints `READY http://127.0.0.1:PORT/PATH` (PATH = the target's) once listening.
 * Not for anything but benchmarks.
 */
import { processArg } from "../process-args.ts";
import type { Socket } from "bun";

const arg = (name: string, fallback?: string): string => processArg("bun-relay", name, fallback);

const target = new URL(arg("target"));

interface Pair {
  client: Socket<Pair>;
  upstream: Socket<Pair> | undefined;
  /** Client bytes that arrived before the upstream connection was open. */
  early: Uint8Array[];
  closed: boolean;
}

/** Writes everything (a relay of small request/response messages rarely fills a socket; when it does, it waits). */
function relay(to: Socket<Pair>, bytes: Uint8Array): void {
  const written = to.write(bytes);
  if (written >= 0 && written < bytes.byteLength) pendingWrites.set(to, bytes.subarray(written));
}
const pendingWrites = new Map<Socket<Pair>, Uint8Array>();
function drain(socket: Socket<Pair>): void {
  const rest = pendingWrites.get(socket);
  if (rest === undefined) return;
  pendingWrites.delete(socket);
  relay(socket, rest);
}

function close(pair: Pair): void {
  if (pair.closed) return;
  pair.closed = true;
  pair.client.end();
  pair.upstream?.end();
}

const listener = Bun.listen<Pair>({
  hostname: "127.0.0.1",
  port: Number(arg("port", "0")),
  socket: {
    binaryType: "uint8array",
    open(client) {
      const pair: Pair = { client, upstream: undefined, early: [], closed: false };
      client.data = pair;
      void Bun.connect<Pair>({
        hostname: target.hostname,
        port: Number(target.port),
        data: pair,
        socket: {
          binaryType: "uint8array",
          open(upstream) {
            pair.upstream = upstream;
            for (const bytes of pair.early.splice(0)) relay(upstream, bytes);
          },
          data(_upstream, bytes) {
            relay(pair.client, bytes);
          },
          drain,
          close: () => close(pair),
          error: () => close(pair),
          connectError: () => close(pair),
        },
      });
    },
    data(client, bytes) {
      const pair = client.data;
      if (pair.upstream === undefined) pair.early.push(bytes.slice());
      else relay(pair.upstream, bytes);
    },
    drain,
    close: (client) => close(client.data),
    error: (client) => close(client.data),
  },
});

process.stdout.write(`READY http://127.0.0.1:${listener.port}${target.pathname}\n`);
