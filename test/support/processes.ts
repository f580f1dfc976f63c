/**
 * Child processes for integration tests: the mcpmgr CLI (from source or the compiled
 * binary) and @modelcontextprotocol/server-everything. Each waits for a line that
 * proves the process is ready, keeps draining its output, and stops for sure.
 */
import type { Subprocess } from "bun";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

export const REPO_ROOT = resolve(import.meta.dir, "../..");
export const CLI_ENTRY = join(REPO_ROOT, "src/main.ts");
const EVERYTHING = join(REPO_ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");

export interface Running {
  readonly proc: Subprocess<"ignore", "pipe", "pipe">;
  /** stdout and stderr so far, interleaved. */
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number>;
}

export async function freePort(): Promise<number> {
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = server.port as number;
  await server.stop(true);
  return port;
}

export async function spawnUntil(
  cmd: string[],
  ready: RegExp,
  options: { env?: Record<string, string | undefined>; timeoutMs?: number; cwd?: string } = {},
): Promise<Running & { match: RegExpExecArray }> {
  const proc = Bun.spawn(cmd, {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", ...options.env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let output = "";
  let onOutput = () => {};
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      output += decoder.decode(chunk, { stream: true });
      onOutput();
    }
  };
  // Ended at EOF: what the process wrote just before it exited may still be in the pipes then.
  const drained = Promise.all([drain(proc.stdout), drain(proc.stderr)]).catch(() => {});

  const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
    // A clean stop (servers, AI-client files, supervisors) can take seconds on a loaded machine;
    // only a process that is really stuck gets SIGKILL (and callers that check the exit code fail).
    const exited = await Promise.race([proc.exited.then(() => true), Bun.sleep(20_000).then(() => false)]);
    if (!exited) proc.kill("SIGKILL");
    const code = await proc.exited;
    // So that output() holds its last lines; bounded, as a child left behind may keep a pipe open.
    await Promise.race([drained, Bun.sleep(5_000)]);
    return code;
  };

  try {
    const match = await new Promise<RegExpExecArray>((resolveMatch, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${cmd.join(" ")} not ready in time:\n${output}`)),
        options.timeoutMs ?? 15_000,
      );
      onOutput = () => {
        const found = ready.exec(output);
        if (found) {
          clearTimeout(timer);
          onOutput = () => {};
          resolveMatch(found);
        }
      };
      void proc.exited.then(async () => {
        clearTimeout(timer);
        await Promise.race([drained, Bun.sleep(5_000)]); // its last words, which say why
        reject(new Error(`${cmd.join(" ")} exited with ${proc.exitCode} before it was ready:\n${output}`));
      });
      onOutput();
    });
    return { proc, output: () => output, stop, match };
  } catch (err) {
    await stop("SIGKILL");
    throw err;
  }
}

/** `mcpmgr proxy NAME --target-uri TARGET ...`; resolves with the URL it prints. */
export async function startProxy(
  target: string,
  extraArgs: string[] = [],
  options: { binary?: string; env?: Record<string, string> } = {},
) {
  const cmd = options.binary ? [options.binary] : [process.execPath, CLI_ENTRY];
  const running = await spawnUntil(
    [...cmd, "proxy", "test-proxy", "--target-uri", target, ...extraArgs],
    /^(http:\/\/\S+)$/m,
    {
      ...(options.env ? { env: options.env } : {}),
    },
  );
  return { ...running, url: running.match[1] as string };
}

/** Whether a process with this pid exists (signal 0 only checks; the tests run as the supervisors' user). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The pids of running Cedar evaluators (`mcpmgr __cedar-evaluator SOCKET`) whose socket `serves` accepts,
 * found by their command lines in /proc.
 */
export function cedarEvaluatorPids(serves: (socket: string) => boolean): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
    } catch {
      continue;
    }
    const at = argv.indexOf("__cedar-evaluator");
    const socket = at === -1 ? undefined : argv[at + 1];
    if (socket !== undefined && serves(socket)) pids.push(Number(entry));
  }
  return pids;
}

/** `mcpmgr run --foreground ARGS` (from source); resolves with the URL it prints. */
export async function startRun(
  args: readonly string[],
  options: { env?: Record<string, string | undefined>; timeoutMs?: number } = {},
) {
  const running = await spawnUntil([process.execPath, CLI_ENTRY, "run", "--foreground", ...args], /^(http:\/\/\S+)$/m, {
    timeoutMs: 30_000,
    ...options,
  });
  return { ...running, url: running.match[1] as string };
}

/** server-everything in "streamableHttp" (endpoint /mcp) or "sse" (endpoint /sse) mode on a free port. */
export async function startEverything(mode: "streamableHttp" | "sse") {
  const port = await freePort();
  const running = await spawnUntil([process.execPath, EVERYTHING, mode], /listening on port|running on port/i, {
    env: { PORT: String(port) },
  });
  const path = mode === "sse" ? "/sse" : "/mcp";
  return { ...running, url: `http://127.0.0.1:${port}${path}` };
}

/**
 * An idle process whose command line reads `bun -e … ARGV` (what a supervisor's looks like to
 * /proc), as `uid` when given (through setpriv), killed by the caller. Resolves with its pid once
 * /proc shows that command line as that uid: setpriv changes the uid, then execs in place.
 */
export async function idleProcess(argv: readonly string[], uid?: number): Promise<Bun.Subprocess> {
  const { readFileSync, statSync } = await import("node:fs");
  const asUid =
    uid === undefined || uid === process.getuid?.()
      ? []
      : ["setpriv", "--reuid", `${uid}`, "--regid", `${uid}`, "--clear-groups"];
  const proc = Bun.spawn([...asUid, process.execPath, "-e", "setTimeout(() => {}, 60_000)", ...argv], {
    stdio: ["ignore", "ignore", "ignore"],
  });
  const ready = () => {
    try {
      return (
        (uid === undefined || statSync(`/proc/${proc.pid}`).uid === uid) &&
        readFileSync(`/proc/${proc.pid}/cmdline`, "utf8").startsWith(`${process.execPath}\0-e\0`)
      );
    } catch {
      return false;
    }
  };
  const deadline = performance.now() + 5_000;
  while (!ready()) {
    if (performance.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error("the process did not start");
    }
    await Bun.sleep(10);
  }
  return proc;
}

/** `mcpmgr logs NAME -f …` running against `mcpmgrHome`: what it printed so far, and how it ends. */
export interface LogFollower {
  /** Everything it printed on stdout so far. */
  text(): string;
  /** Its exit code once it ends by itself, or "still following" after `graceMs` (it is then killed). */
  end(graceMs?: number): Promise<number | "still following">;
  readonly stderr: ReadableStream<Uint8Array>;
}

export function followLogs(mcpmgrHome: string, args: readonly string[]): LogFollower {
  const follower = Bun.spawn([process.execPath, CLI_ENTRY, "logs", ...args, "-f"], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: mcpmgrHome },
    stdout: "pipe",
    stderr: "pipe",
  });
  let seen = "";
  const reading = (async () => {
    for await (const chunk of follower.stdout) seen += new TextDecoder().decode(chunk);
  })();
  return {
    text: () => seen,
    stderr: follower.stderr,
    async end(graceMs = 15_000) {
      const ended = await Promise.race([follower.exited, Bun.sleep(graceMs).then(() => "still following" as const)]);
      if (ended === "still following") follower.kill();
      await reading;
      return ended;
    },
  };
}

/**
 * Runs `argv` to its end without blocking this process (unlike spawnSync, servers living in the
 * test process go on answering meanwhile) and returns its exit code and output.
 */
export async function spawnCollect(
  argv: readonly string[],
  env: Record<string, string | undefined>,
  stdin?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([...argv], {
    cwd: REPO_ROOT,
    env,
    ...(stdin === undefined ? {} : { stdin: new Blob([stdin]) }),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([
    proc.exited,
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
  ]);
  return { code, stdout, stderr };
}

/** The state letter of `/proc/PID/stat` ("Z": a zombie); undefined once the pid is gone. */
export function procState(pid: number): string | undefined {
  const { readFileSync } = require("node:fs") as typeof import("node:fs");
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
  } catch {
    return undefined;
  }
}

/** Polls until `pid` is a zombie (ended, its exit not collected), failing after 10 s. */
export async function untilZombie(pid: number): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (procState(pid) !== "Z") {
    if (performance.now() > deadline) throw new Error(`process ${pid} did not become a zombie (${procState(pid)})`);
    await Bun.sleep(10);
  }
}

/**
 * A real zombie: a child that has exited and that its parent (a `sleep`, which never waits) leaves
 * uncollected. Resolves with the zombie's pid and its parent, which the caller kills (its end lets
 * init collect the zombie).
 */
export async function zombie(): Promise<{ pid: number; parent: Bun.Subprocess }> {
  const parent = Bun.spawn(["sh", "-c", "sleep 0 & echo $!; exec sleep 300"], { stdout: "pipe" });
  try {
    const reader = parent.stdout.getReader();
    let text = "";
    while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
    reader.releaseLock();
    const pid = Number(text.trim());
    await untilZombie(pid);
    return { pid, parent };
  } catch (err) {
    parent.kill("SIGKILL");
    throw err;
  }
}
