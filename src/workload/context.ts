/**
 * What the workload layer needs from the process it runs in, built once by the CLI (the
 * composition root) and passed down: where to log and print, mcpmgr's directories, the
 * environment, the secrets store, and how mcpmgr authenticates to a remote server. Nothing
 * below reads process.env or writes to the terminal by itself, so tests hand in their own.
 */
import type { OutgoingAuthSpec } from "../config/outgoing-auth-spec.ts";
import type { UpstreamFetch } from "../proxy/authenticated-fetch.ts";
import { createSecretManager, type SecretManager } from "../secrets/manager.ts";
import { resolvePaths, type McpmgrPaths } from "../state/paths.ts";

export type Env = Readonly<Record<string, string | undefined>>;

/** Progress and diagnostics (stderr in a terminal, the proxy log under a supervisor). */
export interface WorkloadLog {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** mcpmgr's credentials for a remote: a fetch that adds them, or undefined when none are configured. */
export type OutgoingAuthentication = (
  spec: OutgoingAuthSpec,
  target: URL,
  name: string,
) => Promise<UpstreamFetch | undefined>;

export interface WorkloadContext {
  readonly log: WorkloadLog;
  /** A result line for stdout (what --print-resolved-overlays asks for). */
  readonly print: (line: string) => void;
  /** Raw text for stderr (a foreground run's audit lines). */
  readonly stderr: (text: string) => void;
  readonly paths: McpmgrPaths;
  readonly env: Env;
  /** The secrets store, opened on first use (most workloads reference no secret). */
  secrets(): SecretManager;
  readonly outgoingAuthentication: OutgoingAuthentication;
}

export interface WorkloadContextOptions {
  readonly log: WorkloadLog;
  readonly print: (line: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Env;
  readonly outgoingAuthentication: OutgoingAuthentication;
  /** Defaults to the directories `env` names (MCPMGR_HOME, XDG_*). */
  readonly paths?: McpmgrPaths;
}

export function workloadContext(options: WorkloadContextOptions): WorkloadContext {
  const paths = options.paths ?? resolvePaths(options.env);
  let secrets: SecretManager | undefined;
  return Object.freeze({
    log: options.log,
    print: options.print,
    stderr: options.stderr,
    paths,
    env: options.env,
    secrets: () => (secrets ??= createSecretManager({ dir: paths.dataDir, env: options.env })),
    outgoingAuthentication: options.outgoingAuthentication,
  });
}
