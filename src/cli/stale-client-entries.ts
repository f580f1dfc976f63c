/**
 * AI-client entries of workloads whose supervisor died without a word (SIGKILL, the OOM
 * killer) point at a port nothing of mcpmgr's holds any more, which another local user could
 * take. The supervisor cannot take them out itself; so whichever mcpmgr command runs next
 * does, before its own work (run-main.ts). Cheap when there is nothing to do: no AI client
 * ever registered is one `exists` check, and the clients module is loaded only for an entry
 * that is stale (workload/client-entries.ts).
 */
import { log } from "./output.ts";

/**
 * Commands that do it themselves (`list`, `client`, and the supervisor, which writes entries),
 * and those that only print something about mcpmgr itself or its catalog (`registry`).
 */
const doneElsewhere: ReadonlySet<string> = new Set([
  "list",
  "client",
  "__supervise",
  "__resolve-overlays",
  "__complete",
  "completion",
  "registry",
  "version",
]);

export async function pruneStaleClientEntries(command: string): Promise<void> {
  if (doneElsewhere.has(command)) return;
  try {
    // Loaded after the check: `registry list` and `version` need none of the state modules (valibot, node:fs).
    const [{ hasClientRegistrations }, { resolvePaths }] = await Promise.all([
      import("../state/client-registrations.ts"),
      import("../state/paths.ts"),
    ]);
    const paths = resolvePaths();
    if (!hasClientRegistrations(paths)) return;
    const { pruneClientEntries } = await import("../workload/client-entries.ts");
    await pruneClientEntries({ log, paths, env: process.env });
  } catch {
    // Never in the way of the command itself (which reports a broken MCPMGR_HOME on its own).
  }
}
