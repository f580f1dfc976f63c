/**
 * Local processes for stdio MCP servers: no shell, an allow-listed environment
 * (ARCHITECTURE.md §3.9), optionally inside the bwrap sandbox, and a stop sequence that gives
 * the server a chance to exit cleanly: close stdin, then SIGTERM, then SIGKILL.
 */
import { closeSync } from "node:fs";
import type { Subprocess } from "bun";

const inheritedEnv = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TZ", "TMPDIR"] as const;

export interface LaunchOptions {
  readonly command: readonly string[];
  /** The user's variables (-e, --env-file, secrets, the registry's defaults). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** bwrap path and its arguments; undefined runs the command directly. */
  readonly sandbox?: { readonly bwrap: string; readonly args: readonly string[] };
  readonly hostEnv?: Readonly<Record<string, string | undefined>>;
  /** Open descriptors handed to the child as 3, 4, ... (closed here once it has them). */
  readonly extraFds?: readonly number[];
}

export interface LocalProcess extends AsyncDisposable {
  readonly proc: Subprocess<"pipe", "pipe", "pipe">;
  readonly pid: number;
  stop(graceMs?: number): Promise<number | null>;
}

function childEnvironment(
  user: Readonly<Record<string, string>>,
  host: Readonly<Record<string, string | undefined>> = process.env,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of inheritedEnv) {
    const value = host[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...user };
}

export function launchProcess(options: LaunchOptions): LocalProcess {
  const argv = options.sandbox
    ? [options.sandbox.bwrap, ...options.sandbox.args, "--", ...options.command]
    : [...options.command];
  const extraFds = options.extraFds ?? [];
  let proc: Subprocess<"pipe", "pipe", "pipe">;
  try {
    proc = Bun.spawn(argv, {
      ...(options.cwd ? { cwd: options.cwd } : {}),
      env: childEnvironment(options.env, options.hostEnv),
      stdio: ["pipe", "pipe", "pipe", ...extraFds],
    }) as Subprocess<"pipe", "pipe", "pipe">;
  } finally {
    for (const fd of extraFds) closeSync(fd);
  }
  const stop = async (graceMs = 5_000): Promise<number | null> => {
    if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
    try {
      await proc.stdin.end();
    } catch {
      // stdin already closed
    }
    if (await exitsWithin(proc, graceMs / 2)) return proc.exitCode;
    proc.kill("SIGTERM");
    if (await exitsWithin(proc, graceMs / 2)) return proc.exitCode;
    proc.kill("SIGKILL");
    await proc.exited;
    return proc.exitCode;
  };
  return { proc, pid: proc.pid, stop, [Symbol.asyncDispose]: async () => void (await stop()) };
}

async function exitsWithin(proc: Subprocess, ms: number): Promise<boolean> {
  return Promise.race([proc.exited.then(() => true), Bun.sleep(ms).then(() => false)]);
}
