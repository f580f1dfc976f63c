/**
 * The default test timeout of the preload (test/support/isolated-home.ts) reaches every test
 * file of a run, not only the first: bun applies a preload's setDefaultTimeout to the first
 * file alone (oven-sh/bun#43787), and the suite's later files then ran on 5 s and timed out
 * under load. Two files whose test outlasts a tiny `--timeout` both pass only if the
 * preload's default is in force in each.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../support/processes.ts";

let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-default-timeout-"));
  for (const name of ["first", "second", "third"])
    await writeFile(
      join(scratch, `${name}.test.ts`),
      `import { test } from "bun:test";\ntest("${name} outlasts --timeout", async () => { await Bun.sleep(400); });\n`,
    );
});

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

test("every test file of a run gets the preload's default timeout, not bun's", async () => {
  // Run from the repository so that its bunfig.toml (and so the preload) applies.
  const run = Bun.spawn(
    [
      process.execPath,
      "test",
      "--timeout",
      "100",
      ...["first", "second", "third"].map((name) => join(scratch, `${name}.test.ts`)),
    ],
    { cwd: REPO_ROOT, stdout: "pipe", stderr: "pipe" },
  );
  const [code, stdout, stderr] = await Promise.all([run.exited, run.stdout.text(), run.stderr.text()]);
  const output = stdout + stderr;
  expect(output).not.toContain("timed out");
  expect(output).toMatch(/^ *3 pass$/m);
  expect(code).toBe(0);
});
