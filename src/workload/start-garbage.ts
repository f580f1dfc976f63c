/**
 * Collecting a supervisor's start-up garbage once its workload runs, so that an idle workload
 * holds what it serves with, not what it parsed, decoded and handshook to start (bench footprint).
 *
 * One full collection as the status says running, and, after the first such report only, one
 * more once the supervisor has had a moment of quiet. The first runs as `run` learns it is running,
 * so `run`'s readiness probe (`mcp-readiness.ts`: an MCP handshake through the proxy) and the
 * status reads around it come after it or overlap it; on a loaded machine what they leave can
 * survive, and an idle process never collects again (bench/README.md, "Outliers under load").
 * The second is on an unref'd timer: it delays neither `run` nor a stopping supervisor's exit,
 * and costs a request only if one arrives in the few milliseconds it takes.
 */

/** How long after the first "running" report the quiet collection runs. */
export const QUIET_COLLECTION_MS = 2_000;

export interface StartGarbageDeps {
  /** A full, synchronous collection. */
  readonly collect: () => void;
  /** Schedules `run` after `ms`; returns something with `unref`. */
  readonly schedule: (run: () => void, ms: number) => { unref(): unknown };
}

const bunDeps: StartGarbageDeps = {
  collect: () => Bun.gc(true),
  schedule: (run, ms) => setTimeout(run, ms),
};

/** What a supervisor calls each time it reports running: collects now, and once more later the first time. */
export function startGarbageCollector(deps: StartGarbageDeps = bunDeps): () => void {
  let scheduled = false;
  return () => {
    deps.collect();
    if (scheduled) return;
    scheduled = true;
    deps.schedule(deps.collect, QUIET_COLLECTION_MS).unref();
  };
}
