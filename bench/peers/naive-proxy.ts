/**
 * The "naive Bun proxy" peer of `bun run bench`: Bun.serve + fetch, request and
 * response bodies buffered, no checks at all (no Origin/Host validation, no body cap,
 * no header filtering beyond what fetch itself drops, no SSE handling, no sessions).
 * It is the floor of any fetch-based proxy in Bun on this machine: what mcpmgr's
 * transparent proxy costs above it is the price of its protections and streaming.
 *
 * Usage: bun bench/peers/naive-proxy.ts --target http://127.0.0.1:PORT/mcp [--port N]
 * Prints `READY http://127.0.0.1:PORT/PATH` (PATH = the target's) once listening.
 * Not for anything but benchmarks.
 */
import { processArg } from "../process-args.ts";

const arg = (name: string, fallback?: string): string => processArg("naive-proxy", name, fallback);

const target = new URL(arg("target"));
const origin = target.origin;

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(arg("port", "0")),
  idleTimeout: 120,
  async fetch(req) {
    const url = req.url;
    const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
    const headers = new Headers(req.headers);
    headers.delete("host");
    const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
    const res = await fetch(origin + path, { method: req.method, headers, body });
    const out = new Headers(res.headers);
    out.delete("content-length");
    out.delete("content-encoding");
    out.delete("transfer-encoding");
    return new Response(await res.arrayBuffer(), { status: res.status, headers: out });
  },
});

process.stdout.write(`READY http://127.0.0.1:${server.port}${target.pathname}\n`);

function shutdown() {
  server.stop(true);
  process.exit(0);
}
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
