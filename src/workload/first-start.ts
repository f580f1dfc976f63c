/**
 * The first start of a workload just recorded (`run` without `--foreground`, `gateway --detach`,
 * `run --from-config`): its supervisor is started and waited for; a workload that never ran is
 * not kept (the user fixes the command and runs it again), and one that runs is written into the
 * AI clients following its group.
 */
import { isMcpmgrError } from "../errors.ts";
import type { WorkloadRecord } from "../state/workload-record.ts";
import { WorkloadStore } from "../state/workloads.ts";
import { clientsSeeStarted } from "./client-entries.ts";
import { LeftToOtherCommand, StartedElsewhere } from "./start-claim.ts";
import type { WorkloadContext } from "./context.ts";
import { type StartSupervisorOptions, startSupervisor } from "./supervisor-control.ts";

export async function firstStart(
  record: WorkloadRecord,
  ctx: WorkloadContext,
  options: Pick<StartSupervisorOptions, "whileWaiting" | "signal"> & {
    /** Called when the start failed, before the workload and its logs are forgotten (the command reads its log to the end). */
    readonly onFailure?: () => Promise<void>;
  } = {},
): Promise<void> {
  const store = new WorkloadStore(ctx.paths);
  try {
    await startSupervisor(store, record.name, ctx, {
      whileWaiting: options.whileWaiting,
      signal: options.signal,
      failureHint: "fix the command and run it again (the workload was not kept)",
      failureNote: "the workload was not kept",
    });
  } catch (err) {
    await options.onFailure?.();
    // Stopped by `mcpmgr stop` while it started: kept, stopped, as that command said. `rm` removed it already.
    // Another command's start (a restart's) or stop is that command's to keep, Ctrl-C or not.
    const stoppedElsewhere =
      err instanceof StartedElsewhere ||
      err instanceof LeftToOtherCommand ||
      (isMcpmgrError(err) && err.code === "CANCELLED" && !options.signal?.aborted);
    if (!stoppedElsewhere) await store.remove(record.name).catch(() => {});
    throw err;
  }
  await clientsSeeStarted(record, ctx);
}
