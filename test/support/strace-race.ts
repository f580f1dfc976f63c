/**
 * A race no timing hits reliably, made certain with strace: the command runs under strace, which
 * holds it at a system call's entry or stops it (SIGSTOP) right there; once strace's output shows
 * that, the test changes what the command is about to touch (a folder swapped for a link, say),
 * then lets it go on to its end.
 */
import { expect } from "bun:test";
import { existsSync, readFileSync, renameSync, symlinkSync } from "node:fs";

export interface StraceRace {
  /** strace's output file. */
  readonly trace: string;
  /** strace's own options: which calls, on which path, held or stopped how (`-P`, `-e trace=`, `-e inject=`). */
  readonly options: readonly string[];
  /** The command strace runs. */
  readonly command: readonly string[];
  readonly env: Record<string, string | undefined>;
  /** What strace writes once the command is held or stopped where the race is. */
  readonly seen: string;
  /** The change made while it waits there. */
  readonly meanwhile: () => void;
}

/** Runs the race (asserting strace got to `seen`); the command's stdout and stderr. */
export async function raceUnderStrace(race: StraceRace): Promise<{ stdout: string; stderr: string }> {
  const strace = Bun.spawn(["strace", "-f", "-o", race.trace, ...race.options, ...race.command], {
    env: race.env,
    stdout: "pipe",
    stderr: "pipe",
  });
  const traced = () => (existsSync(race.trace) ? readFileSync(race.trace, "utf8") : "");
  while (!traced().includes(race.seen) && strace.exitCode === null) await Bun.sleep(20);
  expect(traced()).toContain(race.seen);
  race.meanwhile();
  // A stopped process goes on (one held at a call's entry goes on by itself, and may be gone by now).
  const child = Number(readFileSync(`/proc/${strace.pid}/task/${strace.pid}/children`, "utf8").trim().split(" ")[0]);
  if (child > 0) process.kill(child, "SIGCONT");
  await strace.exited;
  return { stdout: await new Response(strace.stdout).text(), stderr: await new Response(strace.stderr).text() };
}

/** A `meanwhile` for a race on a path: `folder` moved aside and a link to `target` put in its place. */
export function swapForLink(folder: string, target: string): () => void {
  return () => {
    renameSync(folder, `${folder}-moved`);
    symlinkSync(target, folder);
  };
}
