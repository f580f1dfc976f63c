/**
 * The targets of `start`, `restart`, `stop` and `rm`: one NAME (the command as it always was),
 * several NAMEs, `--all`, or `--group G`; and the run over several, one line per workload as each
 * is done, concurrently within workload/batch.ts's bound, then a summary when some failed.
 */
import { parseArgv } from "../config/argv.ts";
import type { OptionTable } from "../config/option-spec.ts";
import { McpmgrError } from "../errors.ts";
import { assertGroupName, assertWorkloadName } from "../state/workload-name.ts";
import type { BatchVerb, Selection } from "../workload/batch.ts";
import type { WorkloadContext } from "../workload/context.ts";
import { cliContext } from "./context.ts";
import { log, reportError } from "./output.ts";

type LifecycleTable = OptionTable & {
  readonly all: { readonly kind: "boolean" };
  readonly group: { readonly kind: "string" };
};

/** One workload named alone, or a selection of several. */
export type Targets = { readonly one: string } | { readonly selection: Selection };

export function parseTargets(rawArgs: readonly string[], table: LifecycleTable, verb: BatchVerb): Targets {
  const { values, positionals: names } = parseArgv(rawArgs, table, verb, false);
  const all = values.all === true;
  const group = values.group as string | undefined;
  if (all && group !== undefined)
    throw new McpmgrError("CONFLICTING_OPTIONS", "--all and --group exclude each other", {
      hint: `'mcpmgr ${verb} --group ${group}' acts on that group's workloads, 'mcpmgr ${verb} --all' on every one`,
    });
  if (names.length > 0 && (all || group !== undefined))
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      `workload names and ${all ? "--all" : "--group"} exclude each other (which workloads did you mean?)`,
      { hint: `name the workloads ('mcpmgr ${verb} NAME...'), or use ${all ? "--all" : "--group GROUP"} alone` },
    );
  if (all) return { selection: { kind: "all" } };
  if (group !== undefined) {
    assertGroupName(group);
    return { selection: { kind: "group", group } };
  }
  const [first] = names;
  if (first === undefined)
    throw new McpmgrError("MISSING_OPTION", "missing the workload NAME", {
      hint: `usage: mcpmgr ${verb} NAME... (see 'mcpmgr list'), or mcpmgr ${verb} --all, or mcpmgr ${verb} --group GROUP`,
    });
  // A name given twice (`stop a a`) is one workload: named once over, the command is the one-NAME one
  // (`start a a` prints its URL on stdout as `start a` does).
  const unique = [...new Set(names)];
  if (unique.length === 1) return { one: first };
  // A name that cannot be a workload's is a usage error, as it is alone: refused before any is acted on.
  for (const name of unique) assertWorkloadName(name);
  return { selection: { kind: "names", names: unique } };
}

/**
 * Acts on every workload of the selection (`act` says its line), one failure not stopping the others;
 * each failure is its own error line as it happens. Exits non-zero with a summary when any failed;
 * a selection with nothing to do says so in one line and succeeds.
 */
export async function runSelection(
  verb: BatchVerb,
  selection: Selection,
  act: (name: string, ctx: WorkloadContext) => Promise<void>,
): Promise<void> {
  // Loaded for several workloads only: one NAME alone (nearly every command) does not pay for it.
  const { assertBatchDone, batchBound, failureOf, interruptedError, planBatch, runBatch } = await import(
    "../workload/batch.ts"
  );
  const ctx = cliContext();
  const plan = await planBatch(verb, selection, ctx.paths);
  for (const err of plan.unreadable) reportError(err);
  const total = plan.phases.flat().length + plan.unreadable.length;
  if (total === 0) return log.info(nothingToDo(verb, selection, plan.already));
  // Ctrl-C (SIGTERM, a closed terminal) leaves no workload half-done: those under way are finished,
  // each with its line, no more are begun, and the end says which were not; a second one ends the
  // command at once (signals.ts), the supervisors under way going on by themselves.
  const { signalExitCode, untilSignal } = await import("./signals.ts");
  let interrupted: NodeJS.Signals | undefined;
  void untilSignal().then((signal) => {
    interrupted = signal;
    log.warn(`${signal}: finishing the workloads under way, beginning no more (again to stop waiting at once)`);
  });
  const outcome = await runBatch(
    plan,
    batchBound(verb),
    (name) => act(name, ctx),
    (name, err) => reportError(failureOf(name, err)),
    () => interrupted !== undefined,
  );
  if (interrupted !== undefined) throw interruptedError(verb, interrupted, outcome, signalExitCode(interrupted));
  assertBatchDone(verb, outcome.failed, plan.unreadable.length, total);
}

function nothingToDo(verb: BatchVerb, selection: Selection, already: number): string {
  const where = selection.kind === "group" ? ` in group ${selection.group}` : "";
  if (already === 0)
    return selection.kind === "group"
      ? `group ${selection.group} has no workloads: nothing to ${verb === "rm" ? "remove" : verb}`
      : `no workloads yet: nothing to ${verb === "rm" ? "remove" : verb}`;
  if (verb === "start") return `every workload${where} is running already: nothing to start`;
  return verb === "stop"
    ? `no workload${where} is running: nothing to stop`
    : `no workload${where} is running: nothing to restart ('mcpmgr start ${selection.kind === "group" ? `--group ${selection.group}` : "--all"}' starts them)`;
}
