/**
 * A running supervisor's status that cannot be written (workload/kept-status.ts): retried until
 * written, a newer status replacing the one retried, never an older one landing after a newer one;
 * the log says once why and once that it is recorded again.
 */
import { expect, test } from "bun:test";
import { McpmgrError } from "../../src/errors.ts";
import { keptStatusReporter } from "../../src/workload/kept-status.ts";

function recordingLog() {
  const lines: string[] = [];
  const at = (level: string) => (text: string) => void lines.push(`${level} ${text}`);
  return { lines, log: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") } };
}

async function until(predicate: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!predicate() && Date.now() < deadline) await Bun.sleep(5);
  expect(predicate()).toBe(true);
}

test("a status that cannot be written is retried, the newest one wins, and the log says so once each way", async () => {
  const written: string[] = [];
  let full = true;
  let attempts = 0;
  const { lines, log } = recordingLog();
  const kept = keptStatusReporter(
    "demo",
    async (status: string) => {
      attempts++;
      if (full)
        throw new McpmgrError("STATE_IO", "cannot write status.json: ENOSPC", {
          hint: "the disk is full: free some space",
        });
      written.push(status);
    },
    log,
    10,
  );
  await kept.report("restarting");
  await kept.report("running");
  await until(() => attempts >= 5);
  expect(written).toEqual([]);
  expect(lines).toEqual([
    "warn demo: its status cannot be recorded: cannot write status.json: ENOSPC (hint: the disk is full: free some space); it keeps serving and tries again",
  ]);
  full = false;
  await until(() => written.length > 0);
  await Bun.sleep(50);
  expect(written).toEqual(["running"]);
  expect(lines.at(-1)).toBe("info demo: its status is recorded again");
  kept.close();
});

test("closed, nothing more is written", async () => {
  const written: string[] = [];
  let full = true;
  const { log } = recordingLog();
  const kept = keptStatusReporter(
    "demo",
    async (status: string) => {
      if (full) throw new Error("ENOSPC");
      written.push(status);
    },
    log,
    10,
  );
  await kept.report("running");
  kept.close();
  full = false;
  await Bun.sleep(60);
  expect(written).toEqual([]);
});
