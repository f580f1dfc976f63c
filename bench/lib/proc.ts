/**
 * Child processes for the bench: spawn, wait until ready, always kill on the way out,
 * and read what the kernel knows about them (/proc/PID/status, /proc/PID/stat).
 */
import type { Subprocess } from "bun";
import { readdirSync, readFileSync } from "node:fs";

export interface Child {
  readonly role: string;
  readonly pid: number;
  readonly proc: Subprocess<"ignore", "pipe", "pipe">;
  /** Everything the child wrote so far (stdout and stderr interleaved), for error reports. */
  output(): string;
  /** Resolves with the first stdout line that matches, or rejects when the child exits first. */
  waitForLine(re: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  stop(): Promise<void>;
}

const children = new Set<Child>();
/** Processes the bench did not spawn but must not leave behind (detached supervisors). */
const adopted: ProcessId[] = [];
let hooksInstalled = false;

/** Kills `pid` with the bench's children on the way out (if it is still the same process). */
export function adopt(pid: number): void {
  installHooks();
  adopted.push(...processIds([pid]));
}

/**
 * Kill every child still running, and whatever they started themselves (a gateway's
 * per-session servers may sit in process groups of their own). Synchronous: safe
 * inside process.on("exit").
 */
export function killAll(signal: NodeJS.Signals = "SIGKILL"): void {
  const descendants = [...children].flatMap((c) => descendantsOf(c.pid));
  for (const c of children) {
    try {
      c.proc.kill(signal);
    } catch {
      // already gone
    }
  }
  killPids(descendants, signal);
  children.clear();
  const strays = adopted.splice(0).filter(({ pid, start }) => startTime(pid) === start);
  killPids([...strays.flatMap(({ pid }) => descendantsOf(pid)), ...strays.map(({ pid }) => pid)], signal);
}

/** Signals each pid, ignoring the ones already gone. */
export function killPids(pids: readonly number[], signal: NodeJS.Signals = "SIGKILL"): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** pid and start time (clock ticks since boot): a pid that was reused later has another start time. */
export interface ProcessId {
  readonly pid: number;
  readonly start: string;
}

export function processIds(pids: readonly number[]): ProcessId[] {
  const out: ProcessId[] = [];
  for (const pid of pids) {
    const start = startTime(pid);
    if (start !== undefined) out.push({ pid, start });
  }
  return out;
}

/** Start time of a live (not zombie) process. */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[0] === "Z" || fields[0] === "X" ? undefined : fields[19]; // state (field 3), starttime (field 22)
  } catch {
    return undefined;
  }
}

/**
 * SIGKILLs the processes of `ids` that are still the same, live processes, after
 * giving them `graceMs` to go by themselves (bwrap --die-with-parent is quick, not instant).
 */
export async function killLeftovers(ids: readonly ProcessId[], graceMs = 1000): Promise<number> {
  const deadline = performance.now() + graceMs;
  while (ids.some(({ pid, start }) => startTime(pid) === start) && performance.now() < deadline) await Bun.sleep(50);
  let killed = 0;
  for (const { pid, start } of ids) {
    if (startTime(pid) !== start) continue;
    try {
      process.kill(pid, "SIGKILL");
      killed++;
    } catch {
      // gone
    }
  }
  return killed;
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on("exit", () => killAll());
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(sig, () => {
      process.stderr.write(`\nbench: ${sig}, stopping children\n`);
      killAll();
      process.exit(130);
    });
  }
  process.on("uncaughtException", (err) => {
    process.stderr.write(`bench: uncaught ${err?.stack ?? err}\n`);
    killAll();
    process.exit(1);
  });
  process.on("unhandledRejection", (err) => {
    process.stderr.write(`bench: unhandled rejection ${(err as Error)?.stack ?? err}\n`);
    killAll();
    process.exit(1);
  });
}

const MAX_CAPTURE = 64 * 1024;

export function spawnChild(
  role: string,
  cmd: string[],
  opts: { cwd?: string; env?: Record<string, string | undefined>; onStderrLine?: (line: string) => void } = {},
): Child {
  installHooks();
  const proc = Bun.spawn(cmd, {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });

  let captured = "";
  let stdoutBuf = "";
  const lineWaiters: { re: RegExp; resolve: (m: RegExpMatchArray) => void }[] = [];
  const capture = (s: string) => {
    captured += s;
    if (captured.length > MAX_CAPTURE) captured = captured.slice(-MAX_CAPTURE);
  };

  const pump = async (stream: ReadableStream<Uint8Array>, isStdout: boolean) => {
    const dec = new TextDecoder();
    let errBuf = "";
    for await (const chunk of stream) {
      const s = dec.decode(chunk, { stream: true });
      if (!isStdout || role !== "loadgen") capture(s);
      if (isStdout) {
        stdoutBuf += s;
        let nl: number;
        while ((nl = stdoutBuf.indexOf("\n")) !== -1) {
          const line = stdoutBuf.slice(0, nl).replace(/\r$/, "");
          stdoutBuf = stdoutBuf.slice(nl + 1);
          for (let i = lineWaiters.length - 1; i >= 0; i--) {
            const w = lineWaiters[i]!;
            const m = line.match(w.re);
            if (m) {
              lineWaiters.splice(i, 1);
              w.resolve(m);
            }
          }
          if (role === "loadgen") capture(`${line}\n`);
        }
      } else if (opts.onStderrLine) {
        errBuf += s;
        let nl: number;
        while ((nl = errBuf.indexOf("\n")) !== -1) {
          opts.onStderrLine(errBuf.slice(0, nl));
          errBuf = errBuf.slice(nl + 1);
        }
      }
    }
  };
  const pumps = Promise.all([pump(proc.stdout, true), pump(proc.stderr, false)]).catch(() => {});

  const child: Child = {
    role,
    pid: proc.pid,
    proc,
    output: () => captured,
    waitForLine(re, timeoutMs) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(new Error(`${role}: no line matching ${re} within ${timeoutMs} ms\n${tail(captured)}`));
        }, timeoutMs);
        lineWaiters.push({
          re,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        });
        proc.exited.then(async (code) => {
          await pumps;
          clearTimeout(timer);
          reject(new Error(`${role} exited (code ${code}) before printing ${re}\n${tail(captured)}`));
        });
      });
    },
    async stop() {
      children.delete(child);
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill("SIGTERM");
      const timeout = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 3000));
      if ((await Promise.race([proc.exited, timeout])) === "timeout") {
        proc.kill("SIGKILL");
        await proc.exited;
      }
    },
  };
  children.add(child);
  proc.exited.then(() => children.delete(child));
  return child;
}

export function tail(s: string, lines = 20): string {
  const all = s.trimEnd().split("\n");
  const t = all.slice(-lines).map((l) => `    | ${l}`);
  return t.length && t[0] !== "    | " ? t.join("\n") : "    | (no output)";
}

/** Poll `url` with GET until it answers `status` (default 200). Fails early if `child` exits. */
export async function waitForHttp(url: string, timeoutMs: number, child?: Child, status = 200): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last = "no answer";
  while (performance.now() < deadline) {
    if (child && (child.proc.exitCode !== null || child.proc.signalCode !== null)) {
      throw new Error(
        `${child.role} exited (code ${child.proc.exitCode ?? child.proc.signalCode}) before ${url} answered\n${tail(child.output())}`,
      );
    }
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status === status) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await Bun.sleep(50);
  }
  throw new Error(
    `${child?.role ?? "server"} not ready: GET ${url} did not return ${status} within ${timeoutMs / 1000} s (last: ${last})` +
      (child ? `\n${tail(child.output())}` : ""),
  );
}

/** A port that was free a moment ago on 127.0.0.1. */
export function freePort(): number {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

/** VmRSS / VmHWM of a process in bytes (undefined when it is gone). */
export function memory(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (key: string) => Number(status.match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"))?.[1] ?? NaN) * 1024;
    return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
  } catch {
    return undefined;
  }
}

const CLK_TCK = 100; // USER_HZ: 100 on every Linux ABI Bun supports

/** user+system CPU seconds a process has used so far (undefined when it is gone). */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // comm (field 2) may contain spaces: split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime, stime = fields 14, 15
  } catch {
    return undefined;
  }
}

/** Busy CPU seconds of the whole machine so far (all cores; everything but idle and iowait). */
export function systemBusySeconds(): number {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "";
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal guest guest_nice (guest* already in user/nice)
    const busy = (v[0] ?? 0) + (v[1] ?? 0) + (v[2] ?? 0) + (v[5] ?? 0) + (v[6] ?? 0) + (v[7] ?? 0);
    return busy / CLK_TCK;
  } catch {
    return NaN;
  }
}

/** CPU seconds used so far by each thread of a process, keyed by thread id (comm = thread name). */
export function threadCpuSeconds(pid: number): Map<string, { name: string; seconds: number }> {
  const out = new Map<string, { name: string; seconds: number }>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.set(tid, { name, seconds: (Number(fields[11]) + Number(fields[12])) / CLK_TCK });
    } catch {
      // thread ended
    }
  }
  return out;
}

/**
 * Every live descendant of `pid` (children, their children, ...), from the ppid field
 * of /proc/PID/stat. A sandboxed server (bwrap and what it runs) or the per-session
 * servers a gateway spawns are found this way: the kernel does not charge their CPU to
 * the parent until they are reaped.
 */
export function descendantsOf(pid: number): number[] {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  for (const name of entries) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ", 2)[1]);
      const list = children.get(ppid);
      if (list) list.push(Number(name));
      else children.set(ppid, [Number(name)]);
    } catch {
      // exited meanwhile
    }
  }
  const out: number[] = [];
  const queue = [pid];
  while (queue.length) {
    for (const kid of children.get(queue.shift() as number) ?? []) {
      out.push(kid);
      queue.push(kid);
    }
  }
  return out;
}

/**
 * Readiness of an MCP endpoint: POST `initialize` until it answers 200 with a result
 * (then the session it opened is ended with DELETE). Fails early if `child` exits.
 */
export async function waitForMcp(url: string, timeoutMs: number, child?: Child): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
  };
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "mcpmgr-bench-ready", version: "0.1.0" },
    },
  });
  let last = "no answer";
  while (performance.now() < deadline) {
    if (child && (child.proc.exitCode !== null || child.proc.signalCode !== null)) {
      throw new Error(
        `${child.role} exited (code ${child.proc.exitCode ?? child.proc.signalCode}) before ${url} answered initialize\n${tail(child.output())}`,
      );
    }
    try {
      const res = await fetch(url, { method: "POST", headers, body, signal: AbortSignal.timeout(2000) });
      const text = await res.text();
      if (res.status === 200 && text.includes('"result"')) {
        const session = res.headers.get("mcp-session-id");
        if (session) {
          await fetch(url, { method: "DELETE", headers: { ...headers, "mcp-session-id": session } })
            .then((r) => r.arrayBuffer())
            .catch(() => {});
        }
        return;
      }
      last = `HTTP ${res.status} ${text.slice(0, 200)}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await Bun.sleep(50);
  }
  throw new Error(
    `${child?.role ?? "server"} not ready: POST initialize to ${url} did not succeed within ${timeoutMs / 1000} s (last: ${last})` +
      (child ? `\n${tail(child.output())}` : ""),
  );
}

/** Memory of one process from /proc/PID/smaps_rollup, in bytes (undefined when it is gone). */
export interface SmapsRollup {
  readonly rss: number;
  /** Proportional set size: private pages plus a share of the shared ones. */
  readonly pss: number;
  readonly privateClean: number;
  readonly privateDirty: number;
  readonly sharedClean: number;
  readonly sharedDirty: number;
  readonly swap: number;
  /** Anonymous pages (heap, stacks, JIT code): never shared between separately started processes. */
  readonly anonymous: number;
}

export function smapsRollup(pid: number): SmapsRollup | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  } catch {
    return undefined;
  }
  const kb = (key: string) => Number(text.match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"))?.[1] ?? NaN) * 1024;
  return {
    rss: kb("Rss"),
    pss: kb("Pss"),
    privateClean: kb("Private_Clean"),
    privateDirty: kb("Private_Dirty"),
    sharedClean: kb("Shared_Clean"),
    sharedDirty: kb("Shared_Dirty"),
    swap: kb("Swap"),
    anonymous: kb("Anonymous"),
  };
}
