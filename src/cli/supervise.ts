/** `mcpmgr __supervise NAME` (hidden): the detached process behind a workload (workload/supervisor.ts). */
import { defineCommand } from "citty";
import { leavePolicyChecksToEvaluator } from "../config/authz-config.ts";
import { trustDuplicateKeysChecked } from "../config/config-file.ts";
import { errorMessage, McpmgrError } from "../errors.ts";
import { cappedLog } from "../state/log-files.ts";
import { resolvePaths } from "../state/paths.ts";
import { WorkloadStore } from "../state/workloads.ts";
import { maxLogBytesFromEnv } from "../workload/limits.ts";
import { STARTED_BY_ENV } from "../workload/start-claim.ts";
import { supervise } from "../workload/supervisor.ts";
import { cliContext } from "./context.ts";
import { log, sendResultsTo, stampLogTimes } from "./output.ts";
import { untilSignal } from "./signals.ts";

export default defineCommand({
  meta: { name: "__supervise", description: "internal: serve a detached workload", hidden: true },
  async run({ rawArgs }) {
    const name = rawArgs[0];
    if (name === undefined)
      throw new McpmgrError("INVALID_ARGUMENT", "__supervise needs a workload name", {
        hint: "this command is internal to mcpmgr",
      });
    // Read once, then out of this process's environment: what it starts (the browser of an OAuth
    // login, which may live on for hours) has no use for it.
    const startedBy = process.env[STARTED_BY_ENV];
    delete process.env[STARTED_BY_ENV];
    // run, start and restart checked the option files for duplicate keys before starting this process.
    trustDuplicateKeysChecked();
    // They checked the Cedar policies too, and the evaluator checks them again as it loads them: this
    // process never loads the Cedar engine (ARCHITECTURE.md §11).
    leavePolicyChecksToEvaluator();
    const proxyLog = printToProxyLog(name);
    stampLogTimes();
    try {
      const ctx = cliContext({ ...(proxyLog ? { stderr: proxyLog } : {}), background: true });
      await supervise(name, ctx, untilSignal(), startedBy);
    } catch (err) {
      // Recorded in the status file for `run` to report; the proxy log gets the reason alone.
      log.error(errorMessage(err));
      process.exit(1);
    }
  },
});

/**
 * What this process prints (its log lines, a remote's login URL, a gateway's audit lines, what a
 * library writes to the console) goes to the proxy log through `cappedLog`, so the proxy log is
 * rotated at the cap like the server's. The log is also this process's stdout and stderr as
 * started (workload/supervisor-control.ts), for what the runtime itself writes there (a crash
 * report): it is therefore rotated in place (`inPlace`), so that those descriptors keep writing to
 * the log `logs --proxy` shows, however often it is rotated, and within the same cap.
 * A cap that is not a number (or a name that is not one) is left for the supervisor to report:
 * its start fails saying so, and the log is then written as started.
 */
function printToProxyLog(name: string): ((text: string) => void) | undefined {
  let append: (text: string) => void;
  try {
    const { path, rotated } = new WorkloadStore(resolvePaths(process.env)).logFiles(name, "proxy");
    append = cappedLog(path, rotated, maxLogBytesFromEnv(process.env), { inPlace: true });
  } catch {
    return undefined;
  }
  const write = (text: string) => {
    try {
      append(text);
    } catch {
      // A log that cannot be written (a full disk) must not stop the workload.
    }
  };
  // Results (printResult writes stdout's descriptor itself) go through the cap like the rest.
  sendResultsTo(write);
  const { formatWithOptions } = require("node:util") as typeof import("node:util");
  const line = (...args: unknown[]) => write(`${formatWithOptions({}, ...args)}\n`);
  for (const method of ["log", "info", "debug", "warn", "error", "trace"] as const) console[method] = line;
  // A library writing to the streams themselves is counted against the cap too: only what the runtime
  // writes to the descriptors natively (a crash report, as the process dies) is not.
  for (const stream of [process.stdout, process.stderr]) {
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      write(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString());
      (rest.find((arg) => typeof arg === "function") as (() => void) | undefined)?.();
      return true;
    }) as typeof stream.write;
  }
  return write;
}
