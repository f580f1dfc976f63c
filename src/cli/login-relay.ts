/**
 * A remote workload's OAuth login happens in its supervisor; the URL to open is in the
 * proxy log. `run` and `start` show it to the user (once) while they wait. The log may be
 * rotated meanwhile (state/log-files.ts): what was written since the wait began is read
 * across a rotation.
 */
import { statSync } from "node:fs";
import { copyNew, type LogFiles, type LogPosition, READER_GONE } from "../state/log-files.ts";
import { LOGIN_URL_MARKER } from "../workload/oauth-callback.ts";
import { log } from "./output.ts";

export function loginUrlRelay(files: LogFiles): () => void {
  // Only what the new supervisor writes: an earlier run's URL is stale.
  const before = statSync(files.path, { throwIfNoEntry: false });
  let at: LogPosition = { ino: before?.ino, offset: before?.size ?? 0 };
  let text = "";
  let shown = false;
  let reading = false;
  const decoder = new TextDecoder();
  const collect = async (chunk: Buffer) => {
    text += decoder.decode(chunk, { stream: true });
    return true;
  };
  return () => {
    if (shown || reading) return;
    reading = true;
    void copyNew(files, at, collect)
      .then((next) => {
        if (next !== READER_GONE) at = next;
        const start = text.indexOf(LOGIN_URL_MARKER);
        if (start === -1) return;
        const url = /^(https?:\/\/\S+)$/m.exec(text.slice(start))?.[1];
        if (url === undefined) return;
        shown = true;
        log.info(LOGIN_URL_MARKER);
        process.stderr.write(`${url}\n`);
      })
      .catch(() => {})
      .finally(() => {
        reading = false;
      });
  };
}
