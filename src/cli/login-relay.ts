/**
 * A remote workload's OAuth login happens in its supervisor; the URL to open is in the
 * proxy log. `run` and `start` show it to the user (once) while they wait.
 */
import { readFileSync, statSync } from "node:fs";
import { LOGIN_URL_MARKER } from "../workload/oauth-callback.ts";
import { log } from "./output.ts";

export function loginUrlRelay(logPath: string): () => void {
  // Only what the new supervisor writes: an earlier run's URL is stale.
  const from = statSync(logPath, { throwIfNoEntry: false })?.size ?? 0;
  let shown = false;
  return () => {
    if (shown) return;
    let text: string;
    try {
      text = readFileSync(logPath, "utf8").slice(from);
    } catch {
      return;
    }
    const at = text.indexOf(LOGIN_URL_MARKER);
    if (at === -1) return;
    const url = /^(https?:\/\/\S+)$/m.exec(text.slice(at))?.[1];
    if (url === undefined) return;
    shown = true;
    log.info(LOGIN_URL_MARKER);
    process.stderr.write(`${url}\n`);
  };
}
