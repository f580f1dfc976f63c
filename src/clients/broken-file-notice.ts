/**
 * A client file mcpmgr cannot read as its format (a syntax error, servers where the client does not keep
 * them, not UTF-8, nested past any settings') is left exactly as it is: mcpmgr never writes a file it
 * cannot parse. It was warned about at every `run`, `start` and `stop`, once per workload and file (seven
 * lines for one broken file), and a new warning drowned among them. Now the warning is given once per
 * state of the file: its real path, size, modification time and the reason are remembered in
 * `<stateDir>/client-file-warnings.json`, and only a change of one of them (an edit, another reason)
 * warns again. `client status` shows the problem every time, and `client register` warns always: the
 * user asked about that client. A workload's supervisor warns always too, and remembers nothing: its
 * warnings go to the proxy log, and the command in the terminal must still say it once.
 */
import { existsSync, realpathSync, statSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../state/atomic-file.ts";
import type { ClientContext } from "./types.ts";

const FILE_NAME = "client-file-warnings.json";

/** Files warned about by this process: `client status` does not repeat what a prune just said. */
const warnedNow = new Set<string>();

/** The file's real path and the state the warning is about; undefined when the file cannot be looked at. */
function stateOf(file: string, reason: string): { path: string; key: string } | undefined {
  try {
    const path = realpathSync(file);
    const info = statSync(path);
    return { path, key: `${info.size}:${info.mtimeMs}:${reason}` };
  } catch {
    return undefined;
  }
}

async function remembered(ctx: ClientContext): Promise<Record<string, string>> {
  try {
    const value = JSON.parse(await Bun.file(join(ctx.paths.stateDir, FILE_NAME)).text()) as unknown;
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, string>)
      : {};
  } catch {
    // Missing, or broken by hand: every broken client file is warned about again, no more.
    return {};
  }
}

/**
 * Whether the warning about `file` (broken for `reason`) should be given now: true the first time for this
 * state of the file, false while it stays the same. Remembering it may fail (a read-only state folder): the
 * warning is then given, as before.
 */
export async function warnAboutBrokenFile(ctx: ClientContext, file: string, reason: string): Promise<boolean> {
  const state = stateOf(file, reason);
  if (state === undefined) return true;
  if (ctx.alwaysWarn === true) {
    warnedNow.add(state.path);
    return true;
  }
  const known = await remembered(ctx);
  if (known[state.path] === state.key) return false;
  warnedNow.add(state.path);
  // Files gone since (a client uninstalled, a HOME moved) are forgotten as the memo is written: it stays as
  // small as the set of client files there are, however many came and went.
  const kept = Object.fromEntries(Object.entries(known).filter(([path]) => existsSync(path)));
  kept[state.path] = state.key;
  await writeFileAtomic(join(ctx.paths.stateDir, FILE_NAME), `${JSON.stringify(kept, null, 2)}\n`).catch(() => {});
  return true;
}

/** Whether this process warned about `file` already (`client status` then leaves it out). */
export function warnedInThisRun(file: string): boolean {
  try {
    return warnedNow.has(realpathSync(file));
  } catch {
    return false;
  }
}
