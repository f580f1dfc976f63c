/**
 * The seam between the runtimes and the rest of mcpmgr: a started MCP server, whatever runs
 * it (a local process, sandboxed or not, or a container), as byte streams, an exit and a
 * stop. The stdio bridge reads its stdout; an HTTP server is reached at `http` instead.
 */
import type { ContainerServer } from "./docker/container.ts";
import type { LocalProcess } from "./process.ts";

export interface ServerHandle {
  /** The MCP protocol for stdio servers; plain output for HTTP servers. */
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  /** `waiting`, where the runtime can tell: what was written and not taken yet (else write's promise says). */
  readonly stdin: { write(data: string): unknown; flush?(): unknown; waiting?(): number };
  /** The exit code once the server stops (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** Replaces the server's secret values in text it writes (its stderr may echo its environment). */
  readonly redact: (text: string) => string;
  /** Its environment holds secret values (what `redact` hides): its supervisor's status says so. */
  readonly holdsSecrets?: boolean;
  /** Graceful stop, forced after graceMs. */
  stop(graceMs?: number): Promise<unknown>;
  /** Whether a stop was asked for: output ending then is the server winding down, not a fault. */
  readonly stopping?: boolean;
}

/**
 * What a runtime hands back: the server, and where an sse/streamable-http server listens
 * (`unix`: reached through that Unix socket only, the relay of an isolated container; host
 * and port still make the request's URL).
 */
export interface LaunchedServer {
  readonly server: ServerHandle;
  readonly http?: { readonly host: string; readonly port: number; readonly unix?: string };
}

/** The server's secret values: how its output is redacted, and whether it has any. */
export interface ServerSecrets {
  readonly redact: (text: string) => string;
  readonly holdsSecrets: boolean;
}

export function processHandle(child: LocalProcess, { redact, holdsSecrets }: ServerSecrets): ServerHandle {
  let stopping = false;
  return {
    stdout: child.proc.stdout,
    stderr: child.proc.stderr,
    stdin: child.proc.stdin,
    exited: child.proc.exited,
    redact,
    holdsSecrets,
    stop: (graceMs) => {
      stopping = true;
      return child.stop(graceMs);
    },
    get stopping() {
      return stopping;
    },
  };
}

export function containerHandle(container: ContainerServer, { redact, holdsSecrets }: ServerSecrets): ServerHandle {
  let stopping = false;
  return {
    stdout: container.stdout,
    stderr: container.stderr,
    stdin: container.stdin,
    exited: container.exited,
    redact,
    holdsSecrets,
    stop: (graceMs) => {
      stopping = true;
      return container.stop(graceMs);
    },
    get stopping() {
      return stopping;
    },
  };
}
