/**
 * This machine's network side for tests that need a host reached without loopback (a remote
 * "elsewhere", a workload bound to a network address) and a listener that only records what it is
 * sent (an HTTP proxy from the environment that must hear nothing).
 */
import { networkInterfaces } from "node:os";
import type { Server } from "bun";

/** This machine's IPv4 address on a network (not loopback), if it has one. */
export function networkAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((nic) => nic !== undefined && nic.family === "IPv4" && !nic.internal)?.address;
}

/** A loopback listener that answers 502 to everything and records each request as `METHOD URL AUTHORIZATION`. */
export function recordingListener(): {
  readonly server: Server<undefined>;
  readonly heard: string[];
  readonly url: string;
} {
  const heard: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      heard.push(`${req.method} ${req.url} ${req.headers.get("authorization")}`);
      return new Response("bad gateway", { status: 502 });
    },
  });
  return { server, heard, url: `http://127.0.0.1:${server.port}` };
}
