/** Limits users can change through the environment (documented in docs/configuration.md). */
import * as v from "valibot";
import { duration } from "../config/values.ts";
import { McpmgrError } from "../errors.ts";
import { defaultMaxBodyBytes } from "../middleware/body-limit.ts";

type Env = Readonly<Record<string, string | undefined>>;

/**
 * One setting a workload's supervisor reads from the environment as it starts. Every one is made
 * by `setting`, which lists it in `startSettings`: the supervisor reads it through `read`, and
 * `assertStartSettings` (`run`, `gateway --detach`, `start`, `restart`, and the supervisor itself)
 * checks every listed one, so a new setting cannot be read without being checked.
 */
export interface StartSetting<T = unknown> {
  readonly name: string;
  /** Only container workloads read it (their engine's limits); undefined: every workload. */
  readonly runtimes?: readonly string[];
  read(env: Env, fallback?: T): T;
}

const settings: StartSetting[] = [];

/** Every setting the supervisor reads, in the order they are checked. */
export const startSettings: readonly StartSetting[] = settings;

function setting<T>(
  name: string,
  schema: v.GenericSchema<string, T>,
  fallback: T,
  expected: string,
  runtimes?: readonly string[],
): StartSetting<T> {
  const made: StartSetting<T> = {
    name,
    ...(runtimes ? { runtimes } : {}),
    read: (env, given = fallback) => fromEnv(env, name, schema, given, expected),
  };
  settings.push(made as StartSetting);
  return made;
}

const byteCount = v.pipe(v.string(), v.regex(/^\d+$/), v.transform(Number), v.minValue(1024));
const sessionCount = v.pipe(v.string(), v.regex(/^\d+$/), v.transform(Number), v.minValue(1));
const memorySize = v.pipe(
  v.string(),
  v.regex(/^\d+(?:[kmg]i?b?)?$/i),
  v.transform((text) => {
    const match = /^(\d+)([kmg])?/i.exec(text) as RegExpExecArray;
    const unit = { k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[(match[2] ?? "").toLowerCase() as "k" | "m" | "g"] ?? 1;
    return Number(match[1]) * unit;
  }),
  v.minValue(6 * 1024 ** 2),
  // A bound, so the number stays a whole one in plain digits: 1000000000000g was passed on as
  // "1.073741824e+21", which bwrap's --size refused, and the server "failed its handshake".
  v.maxValue(1024 ** 4),
);
const pidCount = v.pipe(v.string(), v.regex(/^\d+$/), v.transform(Number), v.minValue(16));
const containerRuntimes = ["docker", "podman"] as const;

const requestTimeout = setting("MCPMGR_REQUEST_TIMEOUT", duration, 10 * 60_000, "a duration such as 90s or 10m");
const sessionIdle = setting("MCPMGR_SESSION_IDLE_TIMEOUT", duration, 30 * 60_000, "a duration such as 5m or 1h");
const maxRequestBytes = setting(
  "MCPMGR_MAX_REQUEST_BYTES",
  byteCount,
  defaultMaxBodyBytes,
  "a whole number of bytes, at least 1024",
);
const maxMessageBytes = setting(
  "MCPMGR_MAX_MESSAGE_BYTES",
  byteCount,
  64 * 1024 * 1024,
  "a whole number of bytes, at least 1024",
);
const maxSessions = setting("MCPMGR_MAX_SESSIONS", sessionCount, 1_000, "a whole number of sessions, at least 1");
const upstreamHeadersTimeout = setting(
  "MCPMGR_UPSTREAM_HEADERS_TIMEOUT",
  duration,
  5 * 60_000,
  "a duration such as 90s or 10m",
);
const maxLogBytes = setting(
  "MCPMGR_MAX_LOG_BYTES",
  byteCount,
  10 * 1024 * 1024,
  "a whole number of bytes, at least 1024",
);
// The container limits' defaults are the engine's (runtime/docker/container-config.ts), given to `read`.
const containerMemory = setting(
  "MCPMGR_CONTAINER_MEMORY",
  memorySize,
  0,
  "a size such as 512m or 2g (from 6m to 1024g)",
  containerRuntimes,
);
const containerPids = setting(
  "MCPMGR_CONTAINER_PIDS",
  pidCount,
  0,
  "a whole number of processes, at least 16",
  containerRuntimes,
);

// The process sandbox's /tmp and home are tmpfs, held in memory: bwrap's default lets each take
// half the machine's memory, so a server filling them would starve the host.
const sandboxTmpfs = setting(
  "MCPMGR_SANDBOX_TMPFS_SIZE",
  memorySize,
  2 * 1024 ** 3,
  "a size such as 512m or 2g (from 6m to 1024g)",
  ["process"],
);

function fromEnv<T>(env: Env, name: string, schema: v.GenericSchema<string, T>, fallback: T, expected: string): T {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const parsed = v.safeParse(schema, raw, { abortPipeEarly: true });
  if (!parsed.success) {
    throw new McpmgrError("INVALID_OPTION", `${name} ${JSON.stringify(raw)}: must be ${expected}`, {
      hint: `unset ${name} to use the default`,
    });
  }
  return parsed.output;
}

export function maxBodyBytesFromEnv(env: Env): number {
  return maxRequestBytes.read(env);
}

/** The largest message a stdio server may send on one line (MCPMGR_MAX_MESSAGE_BYTES, default 64 MiB). */
export function maxMessageBytesFromEnv(env: Env): number {
  return maxMessageBytes.read(env);
}

/**
 * How large a background workload's log grows before it is rotated to `<log>.1`, replacing the
 * previous one (MCPMGR_MAX_LOG_BYTES, default 10 MiB): the log takes at most about twice this.
 */
export function maxLogBytesFromEnv(env: Env): number {
  return maxLogBytes.read(env);
}

/** The proxy's limits, read before anything starts so a bad value cannot leave a server running. */
export interface ProxyLimits {
  /** How long the stdio bridge waits for the server to answer one request. */
  readonly requestTimeoutMs: number;
  /** How long a client session may stay without any request before it ends. */
  readonly sessionIdleMs: number;
  readonly maxBodyBytes: number;
  /** The largest line a stdio server may write (MCPMGR_MAX_MESSAGE_BYTES). */
  readonly maxMessageBytes: number;
  /** Client sessions open at once (MCPMGR_MAX_SESSIONS); a new one past it is answered 503. */
  readonly maxSessions: number;
  /** How long the forwarder waits for an HTTP upstream's response headers (MCPMGR_UPSTREAM_HEADERS_TIMEOUT). */
  readonly upstreamHeadersTimeoutMs: number;
}

export function proxyLimits(env: Env): ProxyLimits {
  return Object.freeze({
    requestTimeoutMs: requestTimeoutMsFromEnv(env),
    sessionIdleMs: sessionIdleMsFromEnv(env),
    maxBodyBytes: maxBodyBytesFromEnv(env),
    maxMessageBytes: maxMessageBytesFromEnv(env),
    maxSessions: maxSessionsFromEnv(env),
    upstreamHeadersTimeoutMs: upstreamHeadersTimeoutMsFromEnv(env),
  });
}

/** Client sessions open at once, per workload, proxy or gateway (MCPMGR_MAX_SESSIONS, default 1,000). */
export function maxSessionsFromEnv(env: Env): number {
  return maxSessions.read(env);
}

/**
 * How long the forwarder waits for an HTTP upstream to start answering (its response headers;
 * a streamed body may then take as long as it takes): MCPMGR_UPSTREAM_HEADERS_TIMEOUT, default 5m.
 */
export function upstreamHeadersTimeoutMsFromEnv(env: Env): number {
  return upstreamHeadersTimeout.read(env);
}

/** How long the stdio bridge waits for the server to answer one request. */
export function requestTimeoutMsFromEnv(env: Env): number {
  return requestTimeout.read(env);
}

/** How long a client session may stay without any request before it ends. */
export function sessionIdleMsFromEnv(env: Env): number {
  return sessionIdle.read(env);
}

/** Memory and process-count limits of server containers (MCPMGR_CONTAINER_MEMORY, MCPMGR_CONTAINER_PIDS). */
export function containerResourceLimits(
  defaults: { memoryBytes: number; pids: number },
  env: Env,
): { memoryBytes: number; pids: number } {
  return { memoryBytes: containerMemory.read(env, defaults.memoryBytes), pids: containerPids.read(env, defaults.pids) };
}

/** The size of each of the process sandbox's tmpfs mounts, /tmp, /dev/shm and the home directory (MCPMGR_SANDBOX_TMPFS_SIZE). */
export function sandboxTmpfsBytes(env: Env): number {
  return sandboxTmpfs.read(env);
}

/**
 * Every setting a workload's supervisor reads when it starts (`startSettings`, those of its
 * runtime), checked by the supervisor before it starts anything and, before anything is recorded
 * or stopped, where `run`, `gateway --detach`, `start` or `restart` runs: a bad one is refused in
 * one line rather than ignored (an uncapped log) or leaving a stopped workload failed because of a
 * typo in the shell's environment.
 */
export function assertStartSettings(env: Env, runtime: string): void {
  for (const each of startSettings) if (each.runtimes === undefined || each.runtimes.includes(runtime)) each.read(env);
}
