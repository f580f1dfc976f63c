/**
 * The runtime a workload was created on, as the environment its supervisor starts with (and the one
 * `restart` checks its options in): what detection finds today must not move a workload to another
 * engine. Kept apart from supervisor-control.ts and recorded-spec.ts: both use it, and `list` loads
 * the first without the option parsing the second needs.
 */
import type { WorkloadRecord } from "../state/workload-record.ts";

/**
 * Set beside them when MCPMGR_RUNTIME and DOCKER_HOST are a record's, not the user's: an engine that does not
 * answer there, or answers as the other kind, is then said as the engine the workload was created on
 * (workload/locate.ts), not as variables the user would unset.
 */
export const RECORDED_ENGINE_ENV = "MCPMGR_RECORDED_ENGINE";

/** The runtime chosen when the workload was created, not whatever detection finds today: the supervisor's environment says it. */
export function recordedRuntimeEnv(record: WorkloadRecord): Record<string, string> {
  return {
    ...(record.runtime === "remote" || record.runtime === "gateway" ? {} : { MCPMGR_RUNTIME: record.runtime }),
    ...(record.runtimeEndpoint ? { DOCKER_HOST: record.runtimeEndpoint, [RECORDED_ENGINE_ENV]: "1" } : {}),
  };
}
