/**
 * Bytes between a client and the destination once a request is allowed: connecting to the
 * checked addresses only, piping both ways with half-close, and for plain HTTP the response
 * head marked `Connection: close`.
 */
import { connect, type Socket } from "node:net";
import { MAX_HEAD_BYTES } from "./request-head.ts";

const CONNECT_TIMEOUT_MS = 10_000;

/** Pipe both ways; `pipe` ends the peer when a side ends, so half-close travels through. */
export function relay(
  a: Socket,
  b: Socket,
  bToA: (b: Socket, a: Socket) => void = (from, to) => void from.pipe(to),
): void {
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
export function closingResponse(upstream: Socket, client: Socket): void {
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
export function connectFirst(
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
