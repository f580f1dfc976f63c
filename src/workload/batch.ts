/**
 * `start`, `restart`, `stop` and `rm` of several workloads at once: which workloads a selection
 * means (names, `--all`, `--group`), in which order (gateways and their members), how many at a
 * time, and what to say when some failed. The action on each workload is lifecycle.ts's; the
 * lines the user reads are the CLI's.
 */
import { availableParallelism } from "node:os";
import { errorMessage, isMcpmgrError, McpmgrError } from "../errors.ts";
import { assertGroupExists } from "../state/groups.ts";
import type { McpmgrPaths } from "../state/paths.ts";
import { isGatewayRecord, type WorkloadRecord, WorkloadStore } from "../state/workloads.ts";
import { currentStatus } from "./supervisor-control.ts";

export type BatchVerb = "start" | "restart" | "stop" | "rm";

/** What the user named: workloads by name, every workload of this home, or one group's. */
export type Selection =
  | { readonly kind: "names"; readonly names: readonly string[] }
  | { readonly kind: "all" }
  | { readonly kind: "group"; readonly group: string };

export interface BatchPlan {
  /** Run one after the other; the workloads within a phase run side by side. */
  readonly phases: readonly (readonly string[])[];
  /** Workloads the selection holds that are already as the verb would leave them (`start --all`: running). */
  readonly already: number;
  /** Records that cannot be read (a file broken by hand, a newer mcpmgr's): each one is a failure. */
  readonly unreadable: readonly unknown[];
}

/** States in which a workload's supervisor exists (as `list` shows them). */
const LIVE = new Set(["starting", "running", "restarting"]);

/**
 * Which workloads the verb acts on, in phases. Named workloads are taken as named (an unknown or
 * unreadable name fails when its turn comes, with its own error and did-you-mean); a selector takes
 * those the verb changes: `start` those that do not run (stopped, failed, a supervisor that died
 * with the machine), `stop` and `restart` those that run, `rm` every one.
 *
 * Gateways start before the members of their group, and stop and restart after them: a gateway with
 * policies marks its group as guarded while it runs (state/gateway-guard.ts), so members that come up
 * under it never answer direct callers, and members that go down (or restart) before it never did
 * either. A gateway needs nothing of its members to start: it follows its group's membership as
 * members come and go. Restarted last, it finds its members on this version already, so it warns
 * about none of them as started by an older mcpmgr (gateway/unguarded-members.ts, docs/upgrading.md).
 */
export async function planBatch(verb: BatchVerb, selection: Selection, paths: McpmgrPaths): Promise<BatchPlan> {
  const store = new WorkloadStore(paths);
  const candidates: { name: string; record: WorkloadRecord | undefined }[] = [];
  let unreadable: unknown[] = [];
  let already = 0;
  if (selection.kind === "names") {
    for (const name of new Set(selection.names))
      candidates.push({ name, record: await store.get(name).catch(() => undefined) });
  } else {
    if (selection.kind === "group") await assertGroupExists(paths, selection.group);
    const readable = await store.listReadable();
    // An unreadable record's group is unknown: under --group it is not counted as the group's.
    if (selection.kind === "all") unreadable = readable.errors;
    for (const record of readable.records) {
      if (selection.kind === "group" && record.group !== selection.group) continue;
      if (verb !== "rm") {
        const live = LIVE.has((await currentStatus(store, record.name))?.state ?? "stopped");
        if (live !== (verb !== "start")) {
          already++;
          continue;
        }
      }
      candidates.push({ name: record.name, record });
    }
  }
  const gateways = candidates.filter((c) => c.record !== undefined && isGatewayRecord(c.record)).map((c) => c.name);
  const members = candidates.filter((c) => !gateways.includes(c.name)).map((c) => c.name);
  const ordered = verb === "start" ? [gateways, members] : [members, gateways];
  return { phases: ordered.filter((phase) => phase.length > 0), already, unreadable };
}

/**
 * How many workloads are worked on at once. A start spawns a supervisor and its server (a package
 * runner, an image pull): CPU-bound on a small machine, so at most one per core and never more than
 * four. Stopping and removing mostly wait for processes to exit: eight.
 */
export function batchBound(verb: BatchVerb, cores = availableParallelism()): number {
  return verb === "start" || verb === "restart" ? Math.max(1, Math.min(4, cores)) : 8;
}

export interface BatchOutcome {
  /** The names that failed, in the plan's order. */
  readonly failed: readonly string[];
  /** The names never begun because the batch was interrupted, in the plan's order. */
  readonly notBegun: readonly string[];
}

/**
 * Runs `act` on every workload of the plan, at most `bound` at a time within a phase; a failure is
 * handed to `failed` and the rest go on. Once `interrupted` says so, no further workload is begun:
 * those under way are finished (none is left half-started or half-removed), the rest are `notBegun`.
 */
export async function runBatch(
  plan: BatchPlan,
  bound: number,
  act: (name: string) => Promise<void>,
  failed: (name: string, err: unknown) => void,
  interrupted: () => boolean = () => false,
): Promise<BatchOutcome> {
  const failures = new Set<string>();
  const begun = new Set<string>();
  for (const phase of plan.phases) {
    let next = 0;
    const worker = async () => {
      while (next < phase.length && !interrupted()) {
        const name = phase[next++] as string;
        begun.add(name);
        try {
          await act(name);
        } catch (err) {
          failures.add(name);
          failed(name, err);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(bound, phase.length) }, worker));
  }
  const all = plan.phases.flat();
  return { failed: all.filter((name) => failures.has(name)), notBegun: all.filter((name) => !begun.has(name)) };
}

/**
 * A failure's line names its workload: among several, "its working directory … is gone" or a package
 * path does not say whose start it was. A message that names the workload already (`no workload named
 * bbx`) stays as it is; the name inside a path or a file name (`/home/u/fetch`, `fetch.json`) is not the
 * workload named, so such a message is still led by the name.
 */
export function failureOf(name: string, err: unknown): McpmgrError {
  if (!isMcpmgrError(err))
    return new McpmgrError("INTERNAL", `${name}: unexpected error: ${errorMessage(err)}`, {
      hint: "run again with --debug and report it if it persists",
      cause: err,
    });
  // Workload names are [a-z0-9-]: nothing in one needs escaping.
  if (new RegExp(`(?<![\\w/.-])${name}(?![\\w/-]|\\.\\w)`).test(err.message)) return err;
  return new McpmgrError(err.code, `${name}: ${err.message}`, {
    ...(err.hint !== undefined ? { hint: err.hint } : {}),
    ...(err.details !== undefined ? { details: err.details } : {}),
    ...(err.cause !== undefined ? { cause: err.cause } : {}),
    exitCode: err.exitCode,
  });
}

const DONE: Readonly<Record<BatchVerb, string>> = {
  start: "started",
  restart: "restarted",
  stop: "stopped",
  rm: "removed",
};

/**
 * The end of a batch a signal interrupted (CANCELLED, the signal's exit code): which workloads it
 * never began, so the user knows where each stands, and which of those begun failed.
 */
export function interruptedError(
  verb: BatchVerb,
  signal: string,
  outcome: BatchOutcome,
  exitCode: number,
): McpmgrError {
  const failed = outcome.failed.length > 0 ? `; could not be ${DONE[verb]}: ${outcome.failed.join(", ")}` : "";
  return new McpmgrError(
    "CANCELLED",
    `${signal}: cancelled; not ${DONE[verb]}: ${outcome.notBegun.join(", ") || "none"}${failed}`,
    {
      hint: "the workloads under way were finished, each with its line above; 'mcpmgr list' shows where each stands",
      exitCode,
    },
  );
}

/**
 * WORKLOADS_FAILED when some of a batch failed (each one's own error was reported as it happened);
 * `unreadable` records count too. Nothing when every workload was done.
 */
export function assertBatchDone(verb: BatchVerb, failed: readonly string[], unreadable: number, total: number): void {
  const count = failed.length + unreadable;
  if (count === 0) return;
  const which = [...failed, ...(unreadable > 0 ? [`${unreadable} unreadable record${unreadable > 1 ? "s" : ""}`] : [])];
  throw new McpmgrError(
    "WORKLOADS_FAILED",
    `${count} of ${total} workload${total > 1 ? "s" : ""} could not be ${DONE[verb]}: ${which.join(", ")}`,
    { hint: "each one's error is above; 'mcpmgr list' shows where each workload stands" },
  );
}
