/**
 * Noticing that a stdio server in a container closed its stdout while it goes on running.
 * Neither dockerd (20.10) nor Podman (4.3) says so on the attach connection: its multiplexed
 * stream has no end-of-stream frame per half, and the engine keeps the connection open while
 * the container runs and its stdin is attached (reproduction in docs/containers.md). So, where
 * the engine's processes are visible to mcpmgr (an engine on this machine, in its PID namespace,
 * and /proc readable for them: root, or rootless Podman), the write end of the container's
 * stdout pipe is looked at in /proc: once no process of the container holds it, no answer can
 * come, just as a plain process's stdout pipe reaching its end. Elsewhere (Docker Desktop's VM,
 * another user's engine) nothing is watched and requests wait for their timeout, as before.
 */
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";

/** How often the container's stdout pipe is looked at: one readlink while it is held. */
const WATCH_INTERVAL_MS = 1_000;

/** `pipe:[N]` that `pid`'s fd 1 is, or undefined (not readable, not a pipe: a TTY, a file). */
function stdoutPipe(pid: number): string | undefined {
  try {
    const target = readlinkSync(`/proc/${pid}/fd/1`);
    return target.startsWith("pipe:[") ? target : undefined;
  } catch {
    return undefined;
  }
}

/** `pid` and every process below it (orphans in a container are re-parented to its init, so all stay below). */
function processTree(pid: number): number[] {
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const next = queue.shift() as number;
    found.push(next);
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${next}/task`);
    } catch {
      continue;
    }
    for (const task of tasks) {
      try {
        for (const child of readFileSync(`/proc/${next}/task/${task}/children`, "utf8").split(" "))
          if (child.trim() !== "") queue.push(Number(child));
      } catch {}
    }
  }
  return found;
}

/** A /proc read that failed because the process (or its descriptor) is gone, not because it is hidden. */
function gone(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ESRCH";
}

/**
 * Whether `pid` holds `pipe` on any descriptor; undefined when its descriptors cannot be read (a
 * process of another user, or one that made itself undumpable, with mcpmgr lacking CAP_SYS_PTRACE):
 * such a process may be the one holding it.
 */
function holds(pid: number, pipe: string): boolean | undefined {
  let fds: string[] = [];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch (error) {
    return gone(error) ? false : undefined;
  }
  for (const fd of fds) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) === pipe) return true;
    } catch (error) {
      if (!gone(error)) return undefined;
    }
  }
  return false;
}

/**
 * Watches the stdout pipe of the container whose first process is host process `pid`; calls
 * `onClosed` once no process of the server holds that pipe any more. With `init` (the engine's
 * tiny init as PID 1, which keeps its stdout for good) only the processes below it count. The
 * process is checked to be that container's (its cgroup names the container id), so a PID from
 * another machine's namespace (an engine in a VM) is never taken for one here. Returns the
 * function that ends the watch.
 */
export function watchContainerStdout(
  pid: number,
  containerId: string,
  init: boolean,
  onClosed: () => void,
): () => void {
  let cgroups = "";
  try {
    cgroups = readFileSync(`/proc/${pid}/cgroup`, "utf8");
  } catch {}
  const pipe = stdoutPipe(pid);
  if (pid <= 0 || !cgroups.includes(containerId) || pipe === undefined) return () => {};
  /** The process last seen holding the pipe on its fd 1: one readlink a tick while it does. */
  let holder: number | undefined;
  const timer = setInterval(() => {
    if (holder !== undefined && stdoutPipe(holder) === pipe) return;
    // The container's first process gone: that is its exit, which the engine reports.
    if (!existsSync(`/proc/${pid}/fd`)) return;
    const server = processTree(pid).filter((each) => !init || each !== pid);
    // The init has not started the server yet, or the server has just exited and the init follows.
    if (server.length === 0) return;
    holder = server.find((each) => stdoutPipe(each) === pipe);
    if (holder !== undefined) return;
    let unreadable = false;
    for (const each of server) {
      const held = holds(each, pipe);
      if (held === true) {
        holder = each;
        return;
      }
      if (held === undefined) unreadable = true;
    }
    // A process mcpmgr cannot look into may hold it: not knowing is not a closed stdout.
    if (unreadable) return;
    clearInterval(timer);
    onClosed();
  }, WATCH_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
