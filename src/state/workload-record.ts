/**
 * The workload record (what to run and how to expose it) and its status (what is happening
 * now). They are separate files because they change at different rates and by different
 * writers: the record when the user runs/edits a workload, the status whenever the
 * supervisor starts, restarts or stops it. The record is also the exported configuration
 * (`--from-config`), hence `schema_version` and no volatile fields.
 *
 * Unknown keys are dropped on read, not rejected, so a file written by a newer mcpmgr that
 * only added optional fields still loads; incompatible changes bump `schema_version`.
 * Secrets are references only (NAME → target variable): values live in secrets/, never here.
 */
import * as v from "valibot";
import { namedRecord } from "../config/named-record.ts";
import { deepFreeze } from "../objects.ts";
import { isProcessAlive, isSameProcess } from "./process-start.ts";

/** `gateway`: a background `mcpmgr gateway GROUP --detach`, whose source is the group it serves. */
const SOURCE_KINDS = ["registry", "image", "package", "remote", "config", "gateway"] as const;
const TRANSPORTS = ["stdio", "sse", "streamable-http"] as const;
const PROXY_MODES = ["streamable-http", "sse"] as const;
/** `gateway`: served by the supervisor itself, no server process or container behind it. */
const RUNTIMES = ["process", "docker", "podman", "remote", "gateway"] as const;
export const WORKLOAD_STATES = ["starting", "running", "stopped", "failed", "restarting"] as const;
/** States in which a supervisor process should exist (and be checked by reconcileStatus). */
const LIVE_STATES: ReadonlySet<WorkloadState> = new Set(["starting", "running", "restarting"]);

export type SourceKind = (typeof SOURCE_KINDS)[number];
export type Transport = (typeof TRANSPORTS)[number];
export type ProxyMode = (typeof PROXY_MODES)[number];
export type RuntimeKind = (typeof RUNTIMES)[number];
export type WorkloadState = (typeof WORKLOAD_STATES)[number];

const text = v.pipe(v.string(), v.nonEmpty("must not be empty"));
const envName = v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be a variable name (letters, digits, _)"));
const portNumber = v.pipe(
  v.number(),
  v.integer("must be a port number (1-65535)"),
  v.minValue(1, "must be a port number (1-65535)"),
  v.maxValue(65535, "must be a port number (1-65535)"),
);
const timestamp = v.pipe(v.string(), v.isoTimestamp("must be an ISO 8601 timestamp"));
const oneOf = <const T extends readonly [string, ...string[]]>(choices: T) =>
  v.picklist(choices, `must be one of ${choices.join(", ")}`);
const processId = v.pipe(v.number(), v.integer("must be a process id"), v.minValue(1, "must be a process id"));
const versionOne = v.literal(1, "must be 1 (this file was written by a different version of mcpmgr)");

export const workloadRecordSchema = v.pipe(
  v.object({
    schema_version: versionOne,
    name: v.pipe(
      v.string(),
      v.regex(
        /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/,
        "must be lowercase letters, digits and '-', at most 63 characters",
      ),
    ),
    group: v.optional(text, "default"),
    labels: v.optional(namedRecord(text, v.string()), {}),
    source: v.object({ kind: oneOf(SOURCE_KINDS), ref: text }),
    transport: oneOf(TRANSPORTS),
    /** How a stdio server is exposed; ignored for HTTP transports, which are forwarded as they are. */
    proxyMode: v.optional(oneOf(PROXY_MODES), "streamable-http"),
    host: v.optional(text, "127.0.0.1"),
    /** Chosen once at creation and reused on every restart, so clients' configured URLs keep working. */
    proxyPort: portNumber,
    /** The path clients use on the proxy (/mcp, /sse, or a remote server's own path). */
    proxyPath: v.optional(v.pipe(v.string(), v.startsWith("/", "must start with /")), "/mcp"),
    targetHost: v.optional(text),
    targetPort: v.optional(portNumber),
    runtime: oneOf(RUNTIMES),
    /** Where a container workload's engine answered (as DOCKER_HOST), so stop/start/rm talk to the same one. */
    runtimeEndpoint: v.optional(text),
    permissionProfile: v.optional(text),
    /** Non-secret variables only; anything secret goes in `secrets` as a reference. */
    env: v.optional(namedRecord(envName, v.string()), {}),
    secrets: v.optional(v.array(v.object({ name: text, target: envName })), []),
    args: v.optional(v.array(v.string()), []),
    volumes: v.optional(
      v.array(
        v.object({
          hostPath: text,
          containerPath: v.pipe(v.string(), v.startsWith("/", "must be an absolute container path")),
          readOnly: v.optional(v.boolean(), false),
        }),
      ),
      [],
    ),
    /** Tools to expose; absent means every tool (an empty list would hide them all). */
    tools: v.optional(v.array(text)),
    /**
     * The `run` options exactly as validated (without the source and the server's
     * arguments): restarts, `start` and `--from-config` parse them again with the same
     * parser, so a workload always runs as it was first asked to.
     */
    runOptions: v.optional(v.array(v.string()), []),
    /** Where relative paths in runOptions were meant from. */
    workingDir: v.optional(text),
    createdAt: timestamp,
  }),
  v.forward(
    v.check(
      (record) => record.runtime !== "remote" || record.transport !== "stdio",
      "a remote workload speaks sse or streamable-http, not stdio",
    ),
    ["transport"],
  ),
  v.forward(
    v.check(
      (record) => (record.source.kind === "gateway") === (record.runtime === "gateway"),
      "a gateway (source kind gateway) and only a gateway has the runtime gateway",
    ),
    ["runtime"],
  ),
);

export const workloadStatusSchema = v.object({
  schema_version: v.optional(versionOne, 1),
  state: oneOf(WORKLOAD_STATES),
  /** The supervisor (the detached mcpmgr serving the proxy), not the MCP server itself. */
  pid: v.optional(processId),
  /**
   * The mcpmgr command (`run`, `start`, `restart`, `gateway --detach`) that wrote "starting" before
   * it spawned the supervisor, while there is no supervisor pid yet: a command that ends in between
   * (SIGHUP, SIGKILL, a crash) leaves a start that nobody finishes, which reconcileStatus then sees.
   */
  startedBy: v.optional(v.object({ pid: processId, startTime: v.string() })),
  /**
   * With "stopped", when a `restart` wrote it: that command, whose own "starting" follows once it has
   * removed the workload's containers. A start whose supervisor it stopped waits for that start while
   * the command lives (supervisor-control.ts), rather than report a stop. Older versions drop it
   * (unknown keys are stripped) and read a plain "stopped".
   */
  restartedBy: v.optional(v.object({ pid: processId, startTime: v.string() })),
  /**
   * With "stopped", when a `stop` or `rm` wrote it: that command, and for `rm` (`removing`) that the
   * record's removal follows. A start whose supervisor it stopped reports the stop at once, rather than
   * watch for a restart's mark to follow (as after its supervisor's own unmarked "stopped"), or waits for
   * the removal while the `rm` lives. Older versions drop it and read a plain "stopped"; a "stopped"
   * without it (an older version's stop) is watched for a moment as before.
   */
  stoppedBy: v.optional(v.object({ pid: processId, startTime: v.string(), removing: v.optional(v.literal(true)) })),
  restarts: v.optional(
    v.pipe(v.number(), v.integer("must be a whole number"), v.minValue(0, "must not be negative")),
    0,
  ),
  lastError: v.optional(v.string()),
  /** Written by a stopping supervisor that has requests in progress to let finish: `mcpmgr stop` says what it waits for. */
  draining: v.optional(v.boolean()),
  /**
   * With "running": the workload redacts secret values from its audit and log, whatever gave them (its
   * options, env files, a registry entry's defaults). A gateway's membership counts it as holding secrets
   * (gateway/membership.ts). Older versions drop it; a gateway then judges by the record alone. Any
   * boolean reads (only `true` is written), so a status with `false` is not taken for unreadable.
   */
  holdsSecrets: v.optional(v.boolean()),
  /** What the user can do about lastError (an McpmgrError's hint); absent in status files of older versions. */
  lastHint: v.optional(v.string()),
  /** lastError's code (an McpmgrError's), so a command can word its own way out (a taken name: `start` has no --name). */
  lastCode: v.optional(v.string()),
  /** Text explaining lastError over several lines (a server's last output: McpmgrError's details). */
  lastDetails: v.optional(v.string()),
  updatedAt: timestamp,
});

export type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/** A validated, frozen workload record. */
export type WorkloadRecord = DeepReadonly<v.InferOutput<typeof workloadRecordSchema>>;
/** What callers hand to the store: defaults may be left out; schema_version and createdAt are filled in. */
export type WorkloadInput = DeepReadonly<
  Omit<v.InferInput<typeof workloadRecordSchema>, "schema_version" | "createdAt">
> & {
  readonly schema_version?: 1;
  readonly createdAt?: string;
};
export type WorkloadStatus = DeepReadonly<v.InferOutput<typeof workloadStatusSchema>>;
/** What a supervisor writes; updatedAt defaults to now. */
export type WorkloadStatusInput = DeepReadonly<
  Omit<v.InferInput<typeof workloadStatusSchema>, "updatedAt" | "schema_version">
> & {
  readonly updatedAt?: string;
};

/** A background gateway (`mcpmgr gateway GROUP --detach`), not an MCP server: gateways never aggregate gateways. */
export function isGatewayRecord(record: { readonly source: { readonly kind: SourceKind } }): boolean {
  return record.source.kind === "gateway";
}

/**
 * A status saying "running" whose supervisor is gone (killed, machine rebooted) is a lie
 * `list` should not repeat: report it as failed, with the reason. So is a "starting" written
 * before the supervisor was spawned whose command ended before it spawned it (or before it wrote
 * the supervisor's pid, which the supervisor then writes itself as it starts). `isTaken`: whether
 * the pid is some live process all the same (the kernel gave it to another program, or to another
 * home's supervisor), which the reason then says rather than that pid N no longer runs.
 */
export function reconcileStatus(
  status: WorkloadStatus,
  isAlive: (pid: number) => boolean,
  isStarterAlive: (starter: { readonly pid: number; readonly startTime: string }) => boolean = (starter) =>
    isSameProcess(starter.pid, starter.startTime),
  isTaken: (pid: number) => boolean = isProcessAlive,
): WorkloadStatus {
  if (!LIVE_STATES.has(status.state)) return status;
  if (status.pid === undefined) {
    const starter = status.startedBy;
    if (status.state !== "starting" || starter === undefined || isStarterAlive(starter)) return status;
    return deepFreeze({
      ...status,
      state: "failed",
      lastError: `the mcpmgr command (pid ${starter.pid}) that was starting this workload ended before it handed it to a supervisor`,
    });
  }
  if (isAlive(status.pid)) return status;
  return deepFreeze({
    ...status,
    state: "failed",
    // Not the previous lastError: that one was survived (the state still said running).
    lastError: isTaken(status.pid)
      ? `its supervisor (pid ${status.pid}) is gone; pid ${status.pid} now belongs to another process`
      : `the mcpmgr process ${status.pid} serving this workload is no longer running`,
  });
}
