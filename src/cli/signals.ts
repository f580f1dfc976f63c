import { log } from "./output.ts";

/** SIGINT/SIGTERM → graceful stop; a second signal stops at once. */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let received = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (received) process.exit(signal === "SIGINT" ? 130 : 143);
      received = true;
      resolve(signal);
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
}

/**
 * Runs `start` with a signal that Ctrl-C (or SIGTERM) aborts, its reason the signal's name. A
 * background run's first start listens so: interrupted, it stops the supervisor it started and
 * keeps nothing, rather than leaving a workload "starting" with nobody waiting for it. When the
 * start was cancelled so, says so and exits as the signal asks (130, 143).
 */
export async function cancelOnSignal<T>(name: string, start: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  void untilSignal().then((received) => controller.abort(received));
  try {
    return await start(controller.signal);
  } catch (err) {
    if (!controller.signal.aborted) throw err;
    const received = controller.signal.reason as NodeJS.Signals;
    log.info(`${received}: stopped ${name} while it was starting; the workload was not kept`);
    process.exit(received === "SIGINT" ? 130 : 143);
  }
}
