/**
 * An HTTP/1.1 POST written by hand on its own TCP socket (node:net), for tests that hold many
 * requests open at once: Bun's fetch runs at most 256 at once per process, so a test holding
 * more with fetch would measure its own queue, not the server's.
 */
import { connect } from "node:net";

export interface HeldRequest {
  /** What arrived so far (head and body), once `until` matched; "timeout" or "error: …" otherwise. */
  readonly received: string;
  /** Closes the socket (ends the request). */
  close(): void;
}

/** POSTs `body` to `url` and resolves once the bytes received match `until` (or after `ms`), keeping the socket open. */
export function holdPost(
  url: string,
  headers: Record<string, string>,
  body: string,
  until: RegExp,
  ms: number,
): Promise<HeldRequest> {
  const target = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(target.port), target.hostname);
    const close = () => void socket.destroy();
    let received = "";
    const settle = (outcome: string) => {
      clearTimeout(timer);
      resolve({ received: outcome, close });
    };
    const timer = setTimeout(() => settle("timeout"), ms);
    socket.on("connect", () => {
      const fields = Object.entries({
        ...headers,
        host: target.host,
        "content-length": String(Buffer.byteLength(body)),
      })
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join("");
      socket.write(`POST ${target.pathname}${target.search} HTTP/1.1\r\n${fields}\r\n${body}`);
    });
    socket.on("data", (chunk) => {
      received += chunk.toString();
      if (until.test(received)) settle(received);
    });
    socket.on("error", (err) => settle(`error: ${err.message}`));
  });
}
