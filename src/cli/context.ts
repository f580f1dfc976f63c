/** The workload layer's view of this process: the terminal, the environment, mcpmgr's directories, the browser. */
import { workloadContext, type WorkloadContext } from "../workload/context.ts";
import { log, printResult } from "./output.ts";

/**
 * `stderr`: where raw text goes instead of this process's stderr (a supervisor's: its proxy log);
 * `background`: a detached supervisor (WorkloadContext.background).
 */
export function cliContext(
  options: { readonly stderr?: (text: string) => void; readonly background?: boolean } = {},
): WorkloadContext {
  return workloadContext({
    log,
    print: printResult,
    stderr: options.stderr ?? ((text) => process.stderr.write(text)),
    env: process.env,
    openBrowser,
    background: options.background ?? false,
  });
}

/** The user's browser, started without a shell; where there is none, the printed URL is the way. */
function openBrowser(url: string): void {
  const command =
    process.platform === "darwin"
      ? ["open", url]
      : process.platform === "win32"
        ? ["rundll32", "url.dll,FileProtocolHandler", url]
        : ["xdg-open", url];
  try {
    // process.env given explicitly: without it Bun hands on the environment this process started
    // with, including what it took out since (a supervisor's MCPMGR_STARTED_BY).
    const child = Bun.spawn(command, { stdin: "ignore", stdout: "ignore", stderr: "ignore", env: process.env });
    child.unref();
  } catch {
    // No browser here: the printed URL is the way.
  }
}
