/**
 * The one place that calls Bun.serve. It turns a Handler into a listening server,
 * and knows how to stop it gracefully: stop accepting, let ordinary requests finish
 * within a bound, then close long-lived streams and the remaining connections.
 * The listener can outlive what it serves: a supervisor keeps it while a crashed server
 * restarts (another process must never get the port), swapping the handler (`setHandler`)
 * and draining what the old one still had open (`drain`).
 */
import { listenAddress } from "../config/loopback.ts";
import { McpmgrError, errorMessage } from "../errors.ts";
import type { Handler, RequestContext } from "./handler.ts";
import { JsonRpcCode, jsonRpcError } from "./jsonrpc.ts";
import { LiveStreams } from "./live-streams.ts";

export interface ServeOptions {
  readonly host: string;
  /** 0 or undefined: pick a free port. */
  readonly port: number | undefined;
  readonly handler: Handler;
  readonly live?: LiveStreams;
  /** Seconds before an idle keep-alive connection is closed (streams opt out). */
  readonly idleTimeoutSeconds?: number;
  /** Called with unexpected handler errors (already answered with 500). */
  readonly onError?: (err: unknown) => void;
}

export interface RunningServer extends AsyncDisposable {
  readonly url: URL;
  readonly port: number;
  readonly live: LiveStreams;
  /** Graceful stop; resolves when every connection is closed. */
  shutdown(graceMs?: number): Promise<void>;
  /** Whether requests are in progress (standalone event streams, which never finish, not counted). */
  busy(): boolean;
  /** Serves new requests with `handler` from now on (requests under way finish with the old one). */
  setHandler(handler: Handler): void;
  /**
   * Lets requests under way finish within `graceMs`, then ends what is still open (streams
   * and what their front ends owe, LiveStreams.closeAll) with `reason`; the listener stays.
   */
  drain(graceMs: number, reason: string): Promise<void>;
}

export function serve(options: ServeOptions): RunningServer {
  const live = options.live ?? new LiveStreams();
  let handler = options.handler;
  let server: ReturnType<typeof Bun.serve>;
  try {
    server = Bun.serve({
      hostname: options.host,
      port: options.port ?? 0,
      idleTimeout: options.idleTimeoutSeconds ?? 30,
      fetch(req, srv) {
        const ctx: RequestContext = {
          remoteAddress: srv.requestIP(req)?.address ?? "",
          keepOpen: () => srv.timeout(req, 0),
        };
        return handler(req, ctx);
      },
      error(err) {
        options.onError?.(err);
        return jsonRpcError(500, JsonRpcCode.internalError, "internal proxy error");
      },
    });
  } catch (err) {
    throw listenError(err, options);
  }

  const displayHost = server.hostname?.includes(":") ? `[${server.hostname}]` : server.hostname;
  const port = server.port ?? 0;
  let stopping: Promise<void> | undefined;

  const drain = async (graceMs: number, reason: string): Promise<void> => {
    const deadline = performance.now() + graceMs;
    // Ordinary requests and request-scoped streams (answers still flowing) finish first, within
    // the bound; standalone SSE streams would never "finish". What is still running then is
    // ended with a JSON-RPC error by its front end (LiveStreams.closeAll), never cut silently.
    while (server.pendingRequests > live.size && performance.now() < deadline) await Bun.sleep(20);
    live.closeAll(reason);
  };

  const shutdown = (graceMs = 10_000): Promise<void> => {
    stopping ??= (async () => {
      const closed = server.stop(false);
      const deadline = performance.now() + graceMs;
      await drain(graceMs, "mcpmgr is shutting down");
      // The final events just written still need to reach their clients before sockets are cut.
      const remaining = Math.max(250, deadline - performance.now());
      await Promise.race([closed, Bun.sleep(Math.min(remaining, 2_000))]);
      await server.stop(true);
    })();
    return stopping;
  };

  return {
    url: new URL(`http://${displayHost}:${port}`),
    port,
    live,
    shutdown,
    busy: () => server.pendingRequests > live.size,
    drain,
    setHandler(next) {
      handler = next;
    },
    [Symbol.asyncDispose]: () => shutdown(1_000),
  };
}

function listenError(err: unknown, options: ServeOptions): McpmgrError {
  const code = (err as { code?: string }).code;
  // Without a port option the OS was to choose one: ":0" would only confuse.
  const where = options.port ? `${options.host}:${options.port}` : options.host;
  if (code === "EADDRINUSE") {
    return new McpmgrError("PORT_IN_USE", `port ${options.port} on ${options.host} is already in use`, {
      hint: "choose another port, or leave the port option out to pick a free one",
      cause: err,
    });
  }
  // EINVAL or ENOENT: Bun's answers for a host name that resolves to no address of this machine
  // (which one depends on the resolver's answer).
  const noSuchAddress = ["EADDRNOTAVAIL", "ENOTFOUND", "EAI_NONAME", "EINVAL", "ENOENT"];
  if (code !== undefined && noSuchAddress.includes(code)) {
    return new McpmgrError("LISTEN_FAILED", `cannot listen on ${where}: no such local address`, {
      hint: "use an address of this machine, such as 127.0.0.1",
      cause: err,
    });
  }
  return new McpmgrError("LISTEN_FAILED", `cannot listen on ${where}: ${errorMessage(err)}`, {
    hint: "check the host and port options",
    cause: err,
  });
}

/** A port nothing listens on right now (the OS picks it; it may be taken again later). */
export async function findFreePort(host = "127.0.0.1"): Promise<number> {
  const probe = Bun.serve({ hostname: host, port: 0, fetch: () => new Response() });
  const port = probe.port as number;
  await probe.stop(true);
  return port;
}

/**
 * Whether something already listens on `port` at `host` (checked by trying to listen there). `localhost`
 * is tried where a listener given it binds (config/loopback.ts `listenAddress`): a record written before
 * that says "localhost", and left to the resolver the probe could try ::1 while the workload needs 127.0.0.1.
 */
export function portInUse(port: number, host = "127.0.0.1"): boolean {
  try {
    const probe = Bun.listen({ hostname: listenAddress(host), port, socket: { data() {} } });
    probe.stop(true);
    return false;
  } catch {
    return true;
  }
}
