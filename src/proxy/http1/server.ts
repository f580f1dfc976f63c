/**
 * mcpmgr's own HTTP/1.1 server on Bun.listen: the listener and its connections
 * (connection.ts), with the controls serve.ts needs: requests in flight, a graceful stop
 * (stop listening, close idle connections, let answers under way finish) and a forced one.
 * It exists for speed: with mcpmgr's upstream client on the same thread, a request crosses
 * no thread at all, where Bun.serve costs about a fifth of the proxy's throughput.
 */
import type { Socket, TCPSocketListener } from "bun";
import type { ForwardLane } from "../forward.ts";
import type { RequestContext } from "../handler.ts";
import { ClientConnection, type ConnectionHost, type Http1Limits } from "./connection.ts";

export interface Http1ServerOptions {
  readonly hostname: string;
  readonly port: number;
  readonly idleTimeoutSeconds: number;
  readonly limits?: Partial<Http1Limits>;
  respond(req: Request, ctx: RequestContext): Promise<Response>;
  /** The byte lane, tried before a Request is made (forward.ts). */
  readonly lane?: ForwardLane | undefined;
  failureResponse(err: unknown): Response;
}

/** Bun.serve's limits: a 16 KiB head, 128 MiB bodies; a hundred header fields. */
export const defaultHttp1Limits: Http1Limits = {
  maxHeadBytes: 16 * 1024,
  maxHeaderCount: 100,
  maxBodyBytes: 128 * 1024 * 1024,
};

export class Http1Server {
  readonly #listener: TCPSocketListener<ClientConnection>;
  readonly #connections = new Set<ClientConnection>();
  #pending = 0;
  #stopping = false;
  #allClosed: (() => void) | undefined;
  readonly hostname: string;
  readonly port: number;

  constructor(options: Http1ServerOptions) {
    const limits = { ...defaultHttp1Limits, ...options.limits };
    const server = this;
    const host: Omit<ConnectionHost, "defaultHost"> & { defaultHost: string } = {
      limits,
      idleTimeoutSeconds: options.idleTimeoutSeconds,
      defaultHost: "",
      get stopping() {
        return server.#stopping;
      },
      respond: options.respond,
      lane: options.lane,
      failureResponse: options.failureResponse,
      requestStarted: () => {
        this.#pending++;
      },
      requestEnded: () => {
        this.#pending--;
      },
      connectionClosed: (connection) => {
        this.#connections.delete(connection);
        if (this.#connections.size === 0) this.#allClosed?.();
      },
    };
    this.#listener = Bun.listen<ClientConnection>({
      hostname: options.hostname,
      port: options.port,
      socket: {
        binaryType: "buffer",
        open: (socket: Socket<ClientConnection>) => {
          if (this.#stopping) {
            socket.end();
            return;
          }
          const connection = new ClientConnection(socket, host);
          socket.data = connection;
          this.#connections.add(connection);
        },
        data: (socket, chunk) => socket.data?.onData(chunk as unknown as import("node:buffer").Buffer),
        drain: (socket) => socket.data?.onDrain(),
        close: (socket) => socket.data?.onClose(),
        error: (socket) => socket.data?.onClose(),
        timeout: (socket) => {
          socket.end();
        },
      },
    });
    this.hostname = this.#listener.hostname;
    this.port = this.#listener.port;
    const display = this.hostname.includes(":") ? `[${this.hostname}]` : this.hostname;
    host.defaultHost = `${display}:${this.port}`;
  }

  /** Requests whose answer is not completely written yet. */
  get pendingRequests(): number {
    return this.#pending;
  }

  /**
   * Stops listening. Graceful: idle connections close now, busy ones after their answer;
   * resolves once none is left. Forced: every connection is cut.
   */
  stop(force: boolean): Promise<void> {
    if (!this.#stopping) {
      this.#stopping = true;
      this.#listener.stop(false);
    }
    const closed =
      this.#connections.size === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            const previous = this.#allClosed;
            this.#allClosed = () => {
              previous?.();
              resolve();
            };
          });
    for (const connection of [...this.#connections]) {
      if (force) connection.terminate();
      else connection.closeWhenIdle();
    }
    return closed;
  }
}
