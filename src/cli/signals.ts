import { readFileSync } from "node:fs";
import { log } from "./output.ts";
import { LeftToOtherCommand, StartedElsewhere } from "../workload/start-claim.ts";

/**
 * The signals that stop a command gracefully. SIGHUP is among them: it is what a closed terminal
 * or a dropped ssh session sends, and by default it ends the process at once, leaving a foreground
 * run's container running with nobody to remove it. Unless it was ignored when mcpmgr started
 * (`nohup`, a service manager told to): a handler would undo what was asked for, and the closed
 * terminal `nohup` guards against would stop the workload after all. Decided once, before the first
 * handler is installed (after that the process no longer ignores it).
 */
let stopSignals: readonly NodeJS.Signals[] | undefined;
export function currentStopSignals(): readonly NodeJS.Signals[] {
  stopSignals ??= hangupIgnored() ? ["SIGINT", "SIGTERM"] : ["SIGINT", "SIGTERM", "SIGHUP"];
  return stopSignals;
}

/** Whether this process started with SIGHUP ignored: bit 0 (signal 1) of SigIgn (Linux; elsewhere, no). */
function hangupIgnored(): boolean {
  try {
    const mask = /^SigIgn:\s*([0-9a-fA-F]+)$/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
    return mask !== undefined && (Number.parseInt(mask.slice(-1), 16) & 1) === 1;
  } catch {
    return false;
  }
}

/** The exit status of a process ended by `signal`, as shells report it (128 + its number). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return signal === "SIGINT" ? 130 : signal === "SIGHUP" ? 129 : 143;
}

/** SIGINT/SIGTERM/SIGHUP → graceful stop; a second signal stops at once. */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let received = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (received) process.exit(signalExitCode(signal));
      received = true;
      resolve(signal);
    };
    for (const signal of currentStopSignals()) process.on(signal, onSignal);
  });
}

/**
 * Runs `start` with a signal that Ctrl-C (or SIGTERM) aborts, its reason the signal's name. A
 * background run's first start listens so: interrupted, it stops the supervisor it started and
 * keeps nothing, rather than leaving a workload "starting" with nobody waiting for it. When the
 * start was cancelled so, says so and exits as the signal asks (130, 143). SIGHUP is not a change
 * of mind but a terminal gone: the command stops waiting (129) and the background workload goes on
 * starting under its supervisor, as it would have had the terminal stayed. In the instant between
 * "starting" being recorded and the supervisor being spawned, there is none to go on: that start
 * then reads as failed (state/workload-record.ts `reconcileStatus`), and `start` takes it up.
 */
export async function cancelOnSignal<T>(name: string, start: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  void untilSignal().then((received) => {
    if (received === "SIGHUP") process.exit(signalExitCode(received));
    controller.abort(received);
  });
  try {
    return await start(controller.signal);
  } catch (err) {
    if (!controller.signal.aborted) throw err;
    const received = controller.signal.reason as NodeJS.Signals;
    // Another command stopped the workload, or its start (a restart's) took it over: it stays, that command's.
    if (err instanceof StartedElsewhere || err instanceof LeftToOtherCommand) {
      log.info(`${received}: ${err.message}`);
      process.exit(signalExitCode(received));
    }
    log.info(`${received}: stopped ${name} while it was starting; the workload was not kept`);
    process.exit(signalExitCode(received));
  }
}
