/**
 * `mcpmgr __cedar-evaluator SOCKET LOG [IDLE_MS]` (hidden): the user's one Cedar evaluator
 * (middleware/cedar-evaluator.ts), started detached by the first process with `--authz-config` that
 * finds none on SOCKET (middleware/cedar-client.ts). It exits on its own once no client is left
 * (after IDLE_MS, 3 s unless given: tests shorten it). Its stdio goes nowhere: what it has to say
 * goes to LOG (the home's `state/logs/cedar-evaluator.log`), size-capped at EVALUATOR_LOG_BYTES and
 * rotated to `LOG.1`: starts and exits, clients coming and going, traps, refused frames and
 * questions, never a policy or a request's values.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { defineCommand } from "citty";
import { errorMessage, McpmgrError } from "../errors.ts";
import { serveEvaluator } from "../middleware/cedar-evaluator.ts";
import { bestEffortLog, cappedLog } from "../state/log-files.ts";

/** The evaluator's log is lifecycle lines only: 1 MiB holds weeks of them. */
export const EVALUATOR_LOG_BYTES = 1 << 20;

/** A writer to the log that never throws (a log that cannot be written must not stop the evaluator). */
function evaluatorLog(path: string | undefined): (text: string) => void {
  if (path === undefined) return () => {};
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  } catch {
    // Written to if it can be all the same; lines are dropped otherwise.
  }
  let append: ((text: string) => void) | undefined;
  const write = bestEffortLog(
    (text) => {
      append ??= cappedLog(path, `${path}.1`, EVALUATOR_LOG_BYTES);
      append(text);
    },
    () => {},
  );
  return (text) => write(`${new Date().toISOString()} [${process.pid}] ${text}\n`);
}

export default defineCommand({
  meta: { name: "__cedar-evaluator", description: "internal: decide Cedar policies for every workload", hidden: true },
  async run({ rawArgs }) {
    const [socketPath, logPath, idle] = rawArgs;
    if (socketPath === undefined || !socketPath.startsWith("/") || (logPath !== undefined && !logPath.startsWith("/")))
      throw new McpmgrError("INVALID_ARGUMENT", "__cedar-evaluator needs the absolute paths of its socket and log", {
        hint: "this command is internal to mcpmgr",
      });
    const log = evaluatorLog(logPath);
    const idleExitMs = idle !== undefined && /^\d+$/.test(idle) ? Number(idle) : undefined;
    let outcome: Awaited<ReturnType<typeof serveEvaluator>>;
    try {
      outcome = await serveEvaluator({ socketPath, log, ...(idleExitMs !== undefined ? { idleExitMs } : {}) });
    } catch (err) {
      // Its clients see only that none answers: the reason is here (cedar-client.ts points to it).
      const hint = err instanceof McpmgrError && err.hint !== undefined ? ` (${err.hint})` : "";
      log(`cedar evaluator: could not start: ${errorMessage(err)}${hint}`);
      throw err;
    }
    log(
      `cedar evaluator: exiting (${outcome === "trapped" ? "after a trap" : outcome === "idle" ? "idle" : "another serves"})`,
    );
    // After a trap the instance is not trusted: the process ends, whatever still holds it open.
    process.exit(outcome === "trapped" ? 70 : 0);
  },
});
