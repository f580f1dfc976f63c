/**
 * The ignore-overlay walk (runtime/ignore-overlays.ts resolveOverlays) run in a short-lived
 * child process, `mcpmgr __resolve-overlays`, for a workload's supervisor. Over a big tree
 * (node_modules) the walk makes tens of thousands of strings and promises; freed, they leave
 * allocator pages pinned by a few live blocks in the long-lived supervisor (4-6 MiB on a
 * loaded machine, bench/README.md "Outliers under load"). In a child they go when it exits.
 * The child gets everything already read (the global patterns, each mount's `.mcpmgrignore`
 * text): it only walks, and answers with the overlays or the walk's typed error, rebuilt here.
 * Without an answer from it (none within WALK_TIMEOUT_MS: it is killed), the walk runs in the
 * supervisor after all (a warning in its log).
 */
import { errorMessage, type ErrorCode, McpmgrError } from "../errors.ts";
import {
  type MountForOverlay,
  type Overlay,
  type ResolveOverlaysOptions,
  resolveOverlays,
} from "../runtime/ignore-overlays.ts";
import { selfCommand } from "./self-command.ts";

interface WalkRequest {
  readonly mounts: MountForOverlay[];
  readonly globalPatterns: string[];
  readonly globalSource?: string;
  readonly maxEntries?: number;
  readonly localIgnoreFiles?: [string, string | null][];
}

type WalkReply =
  | { readonly overlays: Overlay[] }
  | { readonly error: { readonly code: ErrorCode; readonly message: string; readonly hint?: string } };

/**
 * resolveOverlays, same arguments and result, walked in `command` (default this executable's
 * `__resolve-overlays`). A child that cannot be started or gives no answer (its executable
 * replaced or removed by an upgrade while the supervisor lives) is not a reason to fail a
 * start: the walk then runs here, as it did before, and `onFallback` says why.
 */
export async function resolveOverlaysApart(
  mounts: readonly MountForOverlay[],
  options: ResolveOverlaysOptions,
  onFallback: (why: string) => void = () => {},
  command: readonly string[] = selfCommand("__resolve-overlays"),
  timeoutMs = WALK_TIMEOUT_MS,
): Promise<Overlay[]> {
  const request: WalkRequest = {
    mounts: mounts.map((m) => ({ hostPath: m.hostPath, containerPath: m.containerPath })),
    globalPatterns: [...options.globalPatterns],
    ...(options.globalSource !== undefined ? { globalSource: options.globalSource } : {}),
    ...(options.maxEntries !== undefined ? { maxEntries: options.maxEntries } : {}),
    ...(options.localIgnoreFiles
      ? { localIgnoreFiles: [...options.localIgnoreFiles].map(([k, v]): [string, string | null] => [k, v ?? null]) }
      : {}),
  };
  const reply = await _ask(command, request, timeoutMs);
  if (typeof reply === "string") {
    onFallback(`the ignore-overlay walk ran in the supervisor itself: ${reply}`);
    return resolveOverlays(mounts, options);
  }
  if ("error" in reply)
    throw new McpmgrError(reply.error.code, reply.error.message, {
      ...(reply.error.hint !== undefined ? { hint: reply.error.hint } : {}),
    });
  return reply.overlays;
}

/**
 * How long the child may take. The walk is capped at 100 000 entries (seconds, even loaded); a
 * child that has not answered by then is stuck (stopped, or blocked before it walks), and without
 * a bound the supervisor's start would wait on it for good.
 */
const WALK_TIMEOUT_MS = 60_000;

/** The child's reply, or why there is none. */
async function _ask(command: readonly string[], request: WalkRequest, timeoutMs: number): Promise<WalkReply | string> {
  let child: Bun.Subprocess<"pipe", "pipe", "pipe">;
  try {
    child = Bun.spawn([...command], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  } catch (err) {
    return `cannot start ${command[0]}: ${errorMessage(err)}`;
  }
  try {
    child.stdin.write(JSON.stringify(request));
    await child.stdin.end();
  } catch {
    // A child that died before reading is reported below, with what it printed.
  }
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, timeoutMs);
  const [out, err, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]).finally(() => clearTimeout(timer));
  if (timedOut) return `it gave no answer within ${timeoutMs} ms and was stopped`;
  try {
    const reply = JSON.parse(out) as WalkReply;
    if ("overlays" in reply && Array.isArray(reply.overlays)) return reply;
    if ("error" in reply && typeof reply.error?.code === "string" && typeof reply.error.message === "string")
      return reply;
  } catch {
    // Not JSON: no answer.
  }
  return `it ended (exit ${exitCode}) without an answer${err.trim() ? `: ${err.trim().split("\n")[0]}` : ""}`;
}

/** The child's side: a request's JSON in, the reply's JSON out (errors included, typed). */
export async function answerWalkRequest(text: string): Promise<string> {
  let reply: WalkReply;
  try {
    const request = JSON.parse(text) as WalkRequest;
    const overlays = await resolveOverlays(request.mounts, {
      globalPatterns: request.globalPatterns,
      ...(request.globalSource !== undefined ? { globalSource: request.globalSource } : {}),
      ...(request.maxEntries !== undefined ? { maxEntries: request.maxEntries } : {}),
      ...(request.localIgnoreFiles
        ? { localIgnoreFiles: new Map(request.localIgnoreFiles.map(([k, v]) => [k, v ?? undefined])) }
        : {}),
    });
    reply = { overlays };
  } catch (err) {
    const typed = err instanceof McpmgrError;
    reply = {
      error: {
        code: typed ? err.code : "INTERNAL",
        message: typed ? err.message : `could not check the mounts against the ignore patterns: ${errorMessage(err)}`,
        ...(typed && err.hint !== undefined ? { hint: err.hint } : {}),
        ...(!typed ? { hint: "run the command again; if it keeps failing, report it with `mcpmgr version`" } : {}),
      },
    };
  }
  return JSON.stringify(reply);
}
