/**
 * One client connection to the egress port: its request head read (bounded in size and time),
 * checked against the rules (names, then every resolved address), answered with an error or
 * relayed to the destination, with one JSON log line per decision.
 */
import { isIP, type Socket } from "node:net";
import type { EgressConfig } from "./config.ts";
import { blockedAddress, isDestinationAllowed, normalizeHost } from "./host-rules.ts";
import { closingResponse, connectFirst, relay } from "./relay.ts";
import { MAX_HEAD_BYTES, parseHead } from "./request-head.ts";

export interface Context {
  config: EgressConfig;
  lookup: (host: string) => Promise<string[]>;
  log: (line: string) => void;
  track: (socket: Socket) => void;
}

/** A client that never finishes its request head must not hold a socket forever. */
const HEAD_TIMEOUT_MS = 30_000;
const REASON: Record<number, string> = { 400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway" };

function _reply(socket: Socket, status: number, body: string): void {
  if (socket.destroyed) return;
  const text = `${body}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${REASON[status]}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
  socket.resume(); // drain whatever the client still sends so its FIN closes the socket
}

async function _route(client: Socket, head: string, rest: Buffer, ctx: Context): Promise<void> {
  const log = (action: string, host: string | null, port: number | null, reason: string) =>
    ctx.log(JSON.stringify({ time: new Date().toISOString(), action, host, port, reason }));
  const target = parseHead(head);
  if (typeof target === "string") return (log("deny", null, null, target), _reply(client, 400, target));
  const name = normalizeHost(target.host) ?? target.host;
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
    addresses = isIP(name) !== 0 ? [name] : (await ctx.lookup(name)).map((a) => normalizeHost(a) ?? a);
  } catch {
    addresses = [];
  }
  if (addresses.length === 0)
    return (
      log("error", name, target.port, "cannot resolve host"), _reply(client, 502, "Bad Gateway: cannot resolve host")
    );
  const blocked = addresses.map((a) => blockedAddress(ctx.config, a)).find((why) => why !== undefined);
  if (blocked)
    return (
      log("deny", name, target.port, `resolves to a blocked address (${blocked})`),
      _reply(client, 403, "Forbidden: blocked destination")
    );
  log("allow", name, target.port, verdict.reason);
  const upstream = await connectFirst(addresses, target.port, ctx.track);
  if (!upstream)
    return (
      log("error", name, target.port, "upstream connect failed"), _reply(client, 502, "Bad Gateway: cannot connect")
    );
  if (client.destroyed) return void upstream.destroy();
  client.setTimeout(0); // tunnels may idle for long (SSE, keep-alive); the ends decide
  if (target.forwardHead === undefined) client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
  else upstream.write(target.forwardHead, "latin1");
  if (rest.length > 0) upstream.write(rest);
  relay(client, upstream, target.forwardHead === undefined ? undefined : closingResponse);
}

export function handleClient(client: Socket, ctx: Context): void {
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
