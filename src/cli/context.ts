/** The workload layer's view of this process: the terminal, the environment, mcpmgr's directories, the browser. */
import { workloadContext, type WorkloadContext } from "../workload/context.ts";
import { log, printResult } from "./output.ts";

/**
 * `stderr`: where raw text goes instead of this process's stderr (a supervisor's: its proxy log);
 * `background`: a detached supervisor (WorkloadContext.background); `env`: instead of this
 * process's environment (a replayed export's runtime).
 */
export function cliContext(
  options: {
    readonly stderr?: (text: string) => void;
    readonly background?: boolean;
    readonly env?: WorkloadContext["env"];
  } = {},
): WorkloadContext {
  return workloadContext({
    log,
    print: printResult,
    stderr: options.stderr ?? ((text) => process.stderr.write(text)),
    env: options.env ?? process.env,
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
    // An environment given explicitly: without one Bun hands on the environment this process started
    // with, including what it took out since (a supervisor's MCPMGR_STARTED_BY). None of mcpmgr's own
    // variables: a browser needs none, and some are secrets (the store's password, MCPMGR_SECRET_*,
    // MCPMGR_REMOTE_OAUTH_CLIENT_SECRET) that a long-lived browser would keep in its environment.
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("MCPMGR_")));
    const child = Bun.spawn(command, { stdin: "ignore", stdout: "ignore", stderr: "ignore", env });
    child.unref();
  } catch {
    // No browser here: the printed URL is the way.
  }
}
