/**
 * A raw HTTP/1.1 server on 127.0.0.1 for tests of mcpmgr's upstream client: it splits the
 * incoming bytes into requests (Content-Length or chunked bodies) and lets a test answer
 * each one by writing whatever bytes it likes, including broken or hostile ones. It records
 * every connection, the requests each carried, and when each closed.
 */
import type { Socket } from "bun";

export interface RawRequest {
  /** Request line and header lines, without the final CRLF CRLF. */
  readonly head: string;
  readonly method: string;
  readonly target: string;
  /** Lower-cased header names; repeated ones joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  /** The body as received on the wire (still chunk-framed when chunked). */
  readonly rawBody: string;
  /** The body, chunked framing removed. */
  readonly body: string;
}

export interface RawConnection {
  readonly socket: Socket<RawConnection>;
  readonly requests: RawRequest[];
  closed: boolean;
  /** Bytes received and not yet split into requests. */
  pending: string;
}

export type Respond = (connection: RawConnection, request: RawRequest, index: number) => unknown;

export interface RawServer extends AsyncDisposable {
  readonly port: number;
  readonly url: string;
  readonly connections: RawConnection[];
  /** Every request so far, on any connection. */
  readonly requests: RawRequest[];
  stop(): void;
}

export function rawServer(respond: Respond): RawServer {
  const connections: RawConnection[] = [];
  const requests: RawRequest[] = [];
  const listener = Bun.listen<RawConnection>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket) {
        socket.data = { socket, requests: [], closed: false, pending: "" };
        connections.push(socket.data);
      },
      data(socket, chunk) {
        const connection = socket.data;
        connection.pending += chunk.toString("latin1");
        for (;;) {
          const request = takeRequest(connection);
          if (request === undefined) return;
          connection.requests.push(request);
          requests.push(request);
          void respond(connection, request, requests.length - 1);
        }
      },
      close(socket) {
        socket.data.closed = true;
      },
    },
  });
  const stop = () => listener.stop(true);
  return {
    port: listener.port,
    url: `http://127.0.0.1:${listener.port}`,
    connections,
    requests,
    stop,
    [Symbol.asyncDispose]: async () => stop(),
  };
}

function takeRequest(connection: RawConnection): RawRequest | undefined {
  const text = connection.pending;
  const end = text.indexOf("\r\n\r\n");
  if (end === -1) return undefined;
  const head = text.slice(0, end);
  const lines = head.split("\r\n");
  const [method = "", target = ""] = (lines[0] ?? "").split(" ");
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  let rest = text.slice(end + 4);
  let rawBody = "";
  let body = "";
  if (headers["transfer-encoding"]?.toLowerCase() === "chunked") {
    let at = 0;
    for (;;) {
      const eol = rest.indexOf("\r\n", at);
      if (eol === -1) return undefined;
      const size = Number.parseInt(rest.slice(at, eol), 16);
      if (size === 0) {
        if (rest.indexOf("\r\n", eol + 2) !== eol + 2) return undefined;
        rawBody = rest.slice(0, eol + 4);
        break;
      }
      if (rest.length < eol + 2 + size + 2) return undefined;
      body += rest.slice(eol + 2, eol + 2 + size);
      at = eol + 2 + size + 2;
    }
  } else {
    const length = Number(headers["content-length"] ?? "0");
    if (rest.length < length) return undefined;
    rawBody = rest.slice(0, length);
    body = rawBody;
  }
  rest = rest.slice(rawBody.length);
  connection.pending = rest;
  return { head, method, target, headers, rawBody, body };
}

/** Polls `check` until it holds (or fails after `timeoutMs`: seconds, as a loaded machine can be slow). */
export async function eventually(check: () => boolean, timeoutMs = 10_000, what = "condition"): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(10);
  }
}
