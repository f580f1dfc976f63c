/**
 * What the workload layer needs from the process it runs in, built once by the CLI (the
 * composition root) and passed down: where to log and print, mcpmgr's directories, the
 * environment, the secrets store, and how to show the user a page (an OAuth login). Nothing
 * below reads process.env or writes to the terminal by itself, so tests hand in their own.
 */
import type { SecretManager } from "../secrets/manager.ts";
import { resolvePaths, type McpmgrPaths } from "../state/paths.ts";

export type Env = Readonly<Record<string, string | undefined>>;

/** Progress and diagnostics (stderr in a terminal, the proxy log under a supervisor). */
export interface WorkloadLog {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

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
  /** Opens a URL in the user's browser (an OAuth login; the URL is printed on stderr as well). */
  readonly openBrowser: (url: string) => void;
  /**
   * A detached process nobody watches (a workload's supervisor): it starts no interactive login
   * a remote asks for while serving (an OAuth step-up); its logins happen at its start.
   */
  readonly background: boolean;
}

export interface WorkloadContextOptions {
  readonly log: WorkloadLog;
  readonly print: (line: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Env;
  /** Defaults to none: the printed URL is the way. */
  readonly openBrowser?: (url: string) => void;
  /** Defaults to false. */
  readonly background?: boolean;
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
    // The store's code (encryption, password sources) loads on first use too: required, since this is synchronous.
    secrets: () =>
      (secrets ??= (require("../secrets/manager.ts") as typeof import("../secrets/manager.ts")).createSecretManager({
        dir: paths.dataDir,
        env: options.env,
      })),
    openBrowser: options.openBrowser ?? (() => {}),
    background: options.background ?? false,
  });
}
