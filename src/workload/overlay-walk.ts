/**
 * The ignore-overlay walk (runtime/ignore-overlays.ts resolveOverlays) run in a short-lived
 * child process, `mcpmgr __resolve-overlays`, for a workload's supervisor. Over a big tree
 * (node_modules) the walk makes tens of thousands of strings and promises; freed, they leave
 * allocator pages pinned by a few live blocks in the long-lived supervisor (4-6 MiB on a
 * loaded machine, bench/README.md "Outliers under load"). In a child they go when it exits.
 * The child gets everything already read (the global patterns, each mount's `.mcpmgrignore`
 * text): it only walks, and answers with the overlays or the walk's typed error, rebuilt here.
 * Without an answer from it (none within WALK_TIMEOUT_MS: it is killed), the walk runs in the
 * supervisor after all (a warning in its log). So it does when the child is another version of
 * mcpmgr (installed over the executable while the supervisor runs, which re-executes the installed
 * one): request and answer each carry their side's version (WALK_VERSION), a child walks only for
 * its own version, and the supervisor takes only its own version's answer, since the two could read
 * each other's fields, or the patterns, differently.
 */
import { errorMessage, type ErrorCode, McpmgrError } from "../errors.ts";
import {
  type MountForOverlay,
  type Overlay,
  type ResolveOverlaysOptions,
  resolveOverlays,
} from "../runtime/ignore-overlays.ts";
import { commit, version } from "../version.ts";
import { selfCommand } from "./self-command.ts";

/** This mcpmgr's version and build, as the walk's request and answer name it: only an exact match counts. */
export const WALK_VERSION = `${version} (${commit})`;

interface WalkRequest {
  /** Absent from the requests of versions before it was added. */
  readonly version?: string;
  readonly mounts: MountForOverlay[];
  readonly globalPatterns: string[];
  readonly globalSource?: string;
  readonly maxEntries?: number;
  readonly localIgnoreFiles?: [string, string | null][];
}

/** `version`: the child's (absent from the answers of versions before it was added); `refused`: another version asked. */
type WalkReply = { readonly version?: string } & (
  | { readonly overlays: Overlay[] }
  | { readonly error: { readonly code: ErrorCode; readonly message: string; readonly hint?: string } }
  | { readonly refused: string }
);

/** What the child says on stderr when another version's supervisor asks it (quoted by that supervisor's warning). */
function refusal(theirs: string | undefined): string {
  return `mcpmgr ${WALK_VERSION} walks only for a supervisor of its own version, and this one is ${theirs === undefined ? "of an earlier version" : theirs}: restart the workload to run it on this version`;
}

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
    version: WALK_VERSION,
    mounts: mounts.map((m) => ({ hostPath: m.hostPath, containerPath: m.containerPath })),
    globalPatterns: [...options.globalPatterns],
    ...(options.globalSource !== undefined ? { globalSource: options.globalSource } : {}),
    ...(options.maxEntries !== undefined ? { maxEntries: options.maxEntries } : {}),
    ...(options.localIgnoreFiles
      ? { localIgnoreFiles: [...options.localIgnoreFiles].map(([k, v]): [string, string | null] => [k, v ?? null]) }
      : {}),
  };
  const reply = await _ask(command, request, timeoutMs);
  if (typeof reply === "string" || "refused" in reply) {
    onFallback(
      `the ignore-overlay walk ran in the supervisor itself: ${typeof reply === "string" ? reply : reply.refused}`,
    );
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
    // Another version's answer (one from before versions were exchanged names none) is not read at all.
    if (typeof reply === "object" && reply !== null && ("overlays" in reply || "error" in reply || "refused" in reply))
      if (reply.version !== WALK_VERSION)
        return {
          refused: `${command[0]} is mcpmgr ${typeof reply.version === "string" ? reply.version : "of an earlier version"} and this supervisor mcpmgr ${WALK_VERSION} (upgraded while the workload ran?); restarting the workload runs it on the installed version`,
        };
    if ("overlays" in reply && Array.isArray(reply.overlays)) return reply;
    if ("error" in reply && typeof reply.error?.code === "string" && typeof reply.error.message === "string")
      return reply;
  } catch {
    // Not JSON: no answer.
  }
  return `it ended (exit ${exitCode}) without an answer${err.trim() ? `: ${err.trim().split("\n")[0]}` : ""}`;
}

/**
 * The child's side: a request's JSON in, the reply's JSON out (errors included, typed), and, for a
 * request of another version, which it does not walk for, why (`refused`, for its stderr and exit 1:
 * a supervisor from before versions were exchanged takes that for no answer, and quotes the line).
 */
export async function answerWalkRequest(text: string): Promise<{ reply: string; refused?: string }> {
  let reply: WalkReply;
  try {
    const request = JSON.parse(text) as WalkRequest;
    const theirs = typeof request.version === "string" ? request.version : undefined;
    if (theirs !== WALK_VERSION) {
      const why = refusal(theirs);
      return { reply: JSON.stringify({ version: WALK_VERSION, refused: why }), refused: why };
    }
    const overlays = await resolveOverlays(request.mounts, {
      globalPatterns: request.globalPatterns,
      ...(request.globalSource !== undefined ? { globalSource: request.globalSource } : {}),
      ...(request.maxEntries !== undefined ? { maxEntries: request.maxEntries } : {}),
      ...(request.localIgnoreFiles
        ? { localIgnoreFiles: new Map(request.localIgnoreFiles.map(([k, v]) => [k, v ?? undefined])) }
        : {}),
    });
    reply = { version: WALK_VERSION, overlays };
  } catch (err) {
    const typed = err instanceof McpmgrError;
    reply = {
      version: WALK_VERSION,
      error: {
        code: typed ? err.code : "INTERNAL",
        message: typed ? err.message : `could not check the mounts against the ignore patterns: ${errorMessage(err)}`,
        ...(typed && err.hint !== undefined ? { hint: err.hint } : {}),
        ...(!typed ? { hint: "run the command again; if it keeps failing, report it with `mcpmgr version`" } : {}),
      },
    };
  }
  return { reply: JSON.stringify(reply) };
}
