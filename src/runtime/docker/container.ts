/**
 * One MCP server container's life: created, attached (stdin for stdio servers; stdout and
 * stderr always, demultiplexed), started, watched until it exits, then stopped and
 * removed. If the attach connection drops while the container still runs (engine
 * restart, proxy in between), it is re-attached, retrying with a backoff as long as the
 * container runs (the engine may refuse for a while: restarting, container paused); the
 * byte streams the bridge reads do not end until the container does.
 *
 * The exit is learnt from the engine's `wait`, but not only: a `wait` whose connection drops
 * after the engine sent its headers (dockerd and Podman send them at once) never settles
 * (docker-modem listens for the answer's end alone), so an engine that is killed and started
 * again would leave the workload "running" with nobody answering. The re-attach loop, which
 * runs whenever the engine connection dropped, therefore settles the exit itself when it finds
 * the container stopped, and asks for a new `wait` after each re-attach.
 *
 * A stdio server that closes its stdout and goes on running is seen through /proc where the
 * engine's processes are visible (stdout-watch.ts): the engine itself never says so.
 */
import { attachStreams } from "./attach.ts";
import { PassThrough, type Duplex } from "node:stream";
import type Docker from "dockerode";
import { McpmgrError } from "../../errors.ts";
import type { ContainerEngine } from "./engine.ts";
import { engineError } from "./images.ts";
import { checkContainerName } from "./container-name.ts";
import { watchContainerStdout } from "./stdout-watch.ts";

/** Re-attach backoff: quick first retries, then at most every 2 s while the container runs. */
const REATTACH_FIRST_DELAY_MS = 100;
const REATTACH_MAX_DELAY_MS = 2_000;

export interface ContainerServer {
  readonly id: string;
  readonly name: string;
  /** The MCP protocol for stdio servers; plain output otherwise. */
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  /** `waiting`: characters written that the engine has not taken yet (the bridge bounds them). */
  readonly stdin: { write(data: string): unknown; waiting(): number };
  /** The container's exit code once it stops on its own or is stopped. */
  readonly exited: Promise<number | null>;
  /** Stops (SIGTERM, then SIGKILL after graceMs) and removes the container and its helpers. */
  stop(graceMs?: number): Promise<void>;
  /** How many times the attach connection was re-established (successful re-attaches). */
  readonly reattachCount: number;
  /** The current attach connection (tests drop it to exercise re-attaching). */
  readonly attachConnection: Duplex | undefined;
}

/** A byte count as MCPMGR_CONTAINER_MEMORY would write it: `512m`, `2g`, else bytes. */
function memorySize(bytes: number): string {
  for (const [unit, size] of [
    ["g", 1024 ** 3],
    ["m", 1024 ** 2],
    ["k", 1024],
  ] as const)
    if (bytes % size === 0) return `${bytes / size}${unit}`;
  return String(bytes);
}

/** A web stream fed by a Node stream that is never ended by re-attaching, only by close(). */
function feed(): { node: PassThrough; web: ReadableStream<Uint8Array>; close(): void } {
  const node = new PassThrough();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  const web = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel() {
      closed = true;
    },
  });
  // Frames from the demuxer are fresh Buffers (Uint8Arrays): passed on without a copy.
  node.on("data", (chunk: Buffer) => {
    if (!closed) controller.enqueue(chunk);
  });
  return {
    node,
    web,
    close() {
      if (closed) return;
      closed = true;
      controller.close();
    },
  };
}

/**
 * Removes a container left under `name` by a crashed supervisor (it would block the name),
 * after checking it is mcpmgr's container for the same workload (container-name.ts).
 */
async function removeStaleContainer(
  engine: ContainerEngine,
  name: string,
  labels: Readonly<Record<string, string>> | undefined,
): Promise<void> {
  const stale = await checkContainerName(engine, name, labels);
  if (stale !== undefined)
    await engine.docker
      .getContainer(stale)
      .remove({ force: true })
      .catch(() => {});
}

/**
 * Creates, attaches and starts the server's container. `signal` aborted while the engine creates it
 * (a stop during a slow create): the container is removed as soon as the engine answers, never started.
 * `beforeStart` is given the created container (files copied in: the set-ID guard); when it fails, the
 * container is removed, never started.
 */
export async function startServerContainer(
  engine: ContainerEngine,
  options: Docker.ContainerCreateOptions & { name: string },
  stdio: boolean,
  cleanup: () => Promise<void> = async () => {},
  signal?: AbortSignal,
  beforeStart?: (container: Docker.Container) => Promise<void>,
): Promise<ContainerServer> {
  const docker = engine.docker;
  let container: Docker.Container;
  try {
    await removeStaleContainer(engine, options.name, options.Labels);
    container = await docker.createContainer(options);
  } catch (err) {
    await cleanup();
    throw err instanceof McpmgrError ? err : engineError(`creating container ${options.name}`, err);
  }
  if (beforeStart && !signal?.aborted) {
    try {
      await beforeStart(container);
    } catch (err) {
      await container.remove({ force: true }).catch(() => {});
      await cleanup();
      throw err instanceof McpmgrError ? err : engineError(`preparing container ${options.name}`, err);
    }
  }
  if (signal?.aborted) {
    await container.remove({ force: true }).catch(() => {});
    await cleanup();
    signal.throwIfAborted();
  }
  const out = feed();
  const err = feed();
  let connection: Duplex | undefined;
  let stopping = false;
  let exitedFlag = false;
  let reattachCount = 0;
  /** Set while the connection is down and the last re-attach attempt failed. */
  let reattachFailure: string | undefined;
  const pending: string[] = [];
  // Our own notes go to the server's stderr stream, which is the workload's log.
  const note = (text: string) => err.node.write(`mcpmgr: ${text}\n`);

  // A hijacked (stdin) attach is a duplex socket; an output-only attach is a plain response stream.
  const closeConnection = () => {
    const current = connection;
    if (current === undefined) return;
    if (typeof current.end === "function") current.end();
    else current.destroy();
  };

  const flushPending = () => {
    if (connection === undefined || connection.destroyed || pending.length === 0) return;
    connection.write(pending.length === 1 ? (pending[0] as string) : pending.join(""));
    pending.length = 0;
  };

  // The kernel's OOM kill exits 137 like any SIGKILL: said in the log (and so in the supervisor's exit
  // line, which quotes the server's last output), or a server that needs more memory restarts in a loop
  // with nothing naming the limit it keeps reaching.
  // dockerd learns of the OOM kill and of the exit as two events, in either order: a container seen
  // stopped with code 137 and no OOM flag yet is asked again, briefly.
  let oomNoted = false;
  const noteOomKill = async (info: { State: { OOMKilled?: boolean; ExitCode?: number } }) => {
    let state = info.State;
    for (let tries = 0; state.OOMKilled !== true && state.ExitCode === 137 && tries < 10; tries++) {
      await Bun.sleep(50);
      const again = await container.inspect().catch(() => undefined);
      if (again === undefined) return;
      state = again.State;
    }
    // Both the engine's `wait` and a re-attach's inspect may see the exit: said once.
    if (state.OOMKilled !== true || stopping || oomNoted) return;
    oomNoted = true;
    const limit = options.HostConfig?.Memory;
    note(
      `${options.name} was killed by the kernel for running out of memory${limit ? ` at its limit of ${memorySize(limit)}` : ""} (MCPMGR_CONTAINER_MEMORY sets it)`,
    );
  };

  let settleExit!: (code: number | null) => void;
  const exited = new Promise<number | null>((resolve) => (settleExit = resolve));
  // One `wait` at a time: each re-attach asks anew (the earlier one may hang on a dropped connection), and
  // aborts the earlier one, whose connection would otherwise stay open — one more per re-attach, for hours
  // of an attach connection that keeps dropping while the engine is up.
  let waiting: AbortController | undefined;
  // A `wait` that fails (the engine unreachable) counts as the exit, as it always did; one we aborted does not.
  const watchExit = () => {
    waiting?.abort();
    const controller = new AbortController();
    waiting = controller;
    void container.wait({ abortSignal: controller.signal }).then(
      async (result: { StatusCode?: number }) => {
        if (!stopping) await container.inspect().then(noteOomKill, () => {});
        settleExit(result.StatusCode ?? null);
      },
      () => {
        if (!controller.signal.aborted) settleExit(null);
      },
    );
  };

  const attach = async (): Promise<void> => {
    const stream = await attachStreams(engine, container, stdio);
    docker.modem.demuxStream(stream, out.node, err.node);
    connection = stream;
    flushPending();
    const dropped = () => {
      if (connection !== stream) return;
      connection = undefined;
      void reattach();
    };
    stream.once("end", dropped);
    stream.once("close", dropped);
    stream.on("error", () => {});
  };

  /**
   * Until it works or the container stops running. A stopped container ends the loop through
   * inspect (not running: the exit is settled from its exit code) or through the exit settling
   * first (exitedFlag).
   */
  const reattach = async (): Promise<void> => {
    let delay = REATTACH_FIRST_DELAY_MS;
    while (!stopping && !exitedFlag) {
      try {
        const info = await container.inspect();
        if (!info.State.Running) {
          if (!stopping) await noteOomKill(info);
          // The engine's own `wait` may be hung on a connection that dropped: the exit is settled here.
          settleExit(typeof info.State.ExitCode === "number" ? info.State.ExitCode : null);
          return;
        }
        await attach();
        // The earlier `wait` may have been cut with the attach connection: a new one watches the exit.
        watchExit();
        reattachCount++;
        reattachFailure = undefined;
        return;
      } catch (error) {
        // Removed while the engine could not be asked (by hand, or an engine that lost it): that is its exit.
        if ((error as { statusCode?: unknown }).statusCode === 404) {
          settleExit(null);
          return;
        }
        const why = engineError("re-attaching", error).message;
        if (reattachFailure === undefined)
          note(`the attach connection to ${options.name} dropped and ${why}; retrying while the container runs`);
        reattachFailure = why;
      }
      await Bun.sleep(delay);
      delay = Math.min(delay * 2, REATTACH_MAX_DELAY_MS);
    }
  };

  try {
    await attach();
    await container.start();
  } catch (error) {
    await container.remove({ force: true }).catch(() => {});
    await cleanup();
    throw engineError(`starting container ${options.name}`, error);
  }
  watchExit();
  // The engine does not say when a stdio server closes its stdout (stdout-watch.ts): where mcpmgr
  // can see the container's processes, that ends the stdout stream, as a process's pipe would.
  let endWatch = () => {};
  if (stdio) {
    const pid = await container
      .inspect()
      .then((info) => (info.State.Running ? info.State.Pid : 0))
      .catch(() => 0);
    endWatch = watchContainerStdout(pid, container.id, options.HostConfig?.Init === true, () => {
      if (!exitedFlag && !stopping) out.close();
    });
  }

  void exited.then(async () => {
    exitedFlag = true;
    endWatch();
    // Settled otherwise (inspect, stop): a `wait` still pending has nothing left to tell.
    waiting?.abort();
    if (reattachFailure !== undefined && !stopping)
      note(
        `${options.name} exited before it could be re-attached (${reattachFailure}): its output since the connection dropped is lost`,
      );
    // Output written just before the exit is still in flight on the attach connection: the
    // engine ends that stream once it has sent everything (bounded, in case it never does).
    const current = connection;
    if (current && !current.destroyed)
      await Promise.race([new Promise((done) => current.once("close", done).once("end", done)), Bun.sleep(2_000)]);
    closeConnection();
    out.close();
    err.close();
  });

  let stopped: Promise<void> | undefined;
  return {
    id: container.id,
    name: options.name,
    stdout: out.web,
    stderr: err.web,
    stdin: {
      // Messages written in one tick go out in one socket write (one frame for dockerd to
      // copy into the container's stdin), like the process runtime's flush per microtask.
      write(data: string) {
        if (exitedFlag) return;
        pending.push(data);
        if (pending.length === 1) queueMicrotask(flushPending);
      },
      waiting: () => pending.reduce((sum, text) => sum + text.length, 0) + (connection?.writableLength ?? 0),
    },
    exited,
    stop(graceMs = 10_000) {
      stopped ??= (async () => {
        stopping = true;
        endWatch();
        // Closing stdin first lets a stdio server exit on EOF, as it would under a process runtime.
        closeConnection();
        await container.stop({ t: Math.max(1, Math.round(graceMs / 1000)) }).catch(() => {});
        // Stopped by now (or gone, or the engine unreachable): a `wait` hung on a dropped connection must not hold this up.
        const info = await container.inspect().catch(() => undefined);
        if (info === undefined || !info.State.Running)
          settleExit(typeof info?.State.ExitCode === "number" ? info.State.ExitCode : null);
        await exited;
        await container.remove({ force: true }).catch(() => {});
        await cleanup();
      })();
      return stopped;
    },
    get reattachCount() {
      return reattachCount;
    },
    get attachConnection() {
      return connection;
    },
  };
}
