/**
 * A foreground run (`run --foreground`) has no workload record, yet its name is taken while it
 * runs: it holds a claim, `<stateDir>/foreground/<name>.json` (its pid and process start
 * time), from before it starts until it ends. Beside the records, not in the runtime folder: that
 * one moves with XDG_RUNTIME_DIR, which a login session sets and `sudo -u`, `su` or cron do not,
 * so a background run from such a shell did not see the claim of a run in the user's terminal. A claim whose process is gone (killed with
 * SIGKILL, the machine restarted) or whose pid another process has since does not count, and
 * is replaced by the next claim. Claims are made and checked under the workload store's lock,
 * with the records (WorkloadStore `claimForegroundName`, `create`), so one name is either a
 * record or one live foreground run, whatever the order they come in. Once the run serves, its
 * claim also holds its client URL: `proxy stdio NAME` (Claude Desktop's entry) relays to it while
 * that process lives.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { ensureDir, writeJsonFile } from "./atomic-file.ts";
import type { McpmgrPaths } from "./paths.ts";
import { isSameProcess, processStartTime } from "./process-start.ts";

const claimSchema = v.object({
  pid: v.pipe(v.number(), v.integer()),
  startTime: v.string(),
  url: v.optional(v.string()),
  group: v.optional(v.string()),
  refusedWhenGuarded: v.optional(v.boolean()),
  host: v.optional(v.string()),
});

/** What the run serves, written with its URL: `proxy stdio NAME` refuses at once to relay to a run that refuses it. */
export interface ForegroundServing {
  readonly group: string;
  /** Whether a gateway with policies over its group makes it refuse every caller (it has no `--oidc-*` of its own). */
  readonly refusedWhenGuarded: boolean;
  /** The address it listens on (`--host`: a wildcard one is reached on more than its URL's); older claims have none. */
  readonly host?: string;
}

export interface ForegroundClaim {
  readonly pid: number;
  /** The URL clients use, once the run serves. */
  readonly url?: string;
  /** Its group, and whether a guard refuses it (claims written before these were kept have neither). */
  readonly serving?: ForegroundServing;
}

function claimPath(paths: McpmgrPaths, name: string): string {
  return join(paths.stateDir, "foreground", `${name}.json`);
}

/** The live foreground run that holds `name`, if any (an unreadable claim holds nothing). */
export function liveForegroundRun(paths: McpmgrPaths, name: string): ForegroundClaim | undefined {
  try {
    const claim = v.parse(claimSchema, JSON.parse(readFileSync(claimPath(paths, name), "utf8")));
    if (!isSameProcess(claim.pid, claim.startTime)) return undefined;
    const { group, refusedWhenGuarded, host } = claim;
    const serving = { group, refusedWhenGuarded, ...(host === undefined ? {} : { host }) };
    return {
      pid: claim.pid,
      ...(claim.url === undefined ? {} : { url: claim.url }),
      ...(group === undefined || refusedWhenGuarded === undefined ? {} : { serving: serving as ForegroundServing }),
    };
  } catch {
    return undefined;
  }
}

/**
 * The names of the live foreground runs (`proxy stdio URL` matches a URL against theirs: a run has no
 * record to be listed with). A folder that cannot be read holds none.
 */
export function liveForegroundNames(paths: McpmgrPaths): string[] {
  let files: string[];
  try {
    files = readdirSync(join(paths.stateDir, "foreground"));
  } catch {
    return [];
  }
  return files
    .filter((file) => file.endsWith(".json"))
    .map((file) => file.slice(0, -".json".length))
    .filter((name) => liveForegroundRun(paths, name) !== undefined);
}

/** Writes this process's claim on `name` (the caller checked, under the store's lock, that none is live). */
export async function writeForegroundClaim(paths: McpmgrPaths, name: string): Promise<void> {
  await ensureDir(join(paths.stateDir, "foreground"));
  await writeJsonFile(claimPath(paths, name), { pid: process.pid, startTime: processStartTime(process.pid) ?? "" });
}

/** Adds the URL this process serves `name` at to its claim (one another run has taken since is left alone). */
export async function writeForegroundUrl(
  paths: McpmgrPaths,
  name: string,
  url: string,
  serving: ForegroundServing,
): Promise<void> {
  if (liveForegroundRun(paths, name)?.pid !== process.pid) return;
  await writeJsonFile(claimPath(paths, name), {
    pid: process.pid,
    startTime: processStartTime(process.pid) ?? "",
    url,
    ...serving,
  });
}

/** Removes this process's claim on `name`; one another run has taken since is left alone. */
export async function releaseForegroundClaim(paths: McpmgrPaths, name: string): Promise<void> {
  const { rm } = await import("node:fs/promises");
  if (liveForegroundRun(paths, name)?.pid === process.pid) await rm(claimPath(paths, name), { force: true });
}
