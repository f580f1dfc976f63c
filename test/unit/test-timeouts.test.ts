/**
 * Every integration and e2e test file sets its own default timeout: bun applies the preload's
 * setDefaultTimeout (test/support/isolated-home.ts) to the first file of a run only
 * (oven-sh/bun#43787), so a file that starts real servers without one runs on bun's 5 s and
 * fails on a loaded machine.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { REPO_ROOT } from "../support/processes.ts";

test("every integration and e2e test file calls setDefaultTimeout at its top level", async () => {
  const without: string[] = [];
  for (const dir of ["test/integration", "test/e2e"]) {
    for await (const file of new Bun.Glob("*.test.ts").scan({ cwd: join(REPO_ROOT, dir) })) {
      const text = await Bun.file(join(REPO_ROOT, dir, file)).text();
      if (!/^setDefaultTimeout\(\d[\d_]*\);$/m.test(text)) without.push(`${dir}/${file}`);
    }
  }
  expect(without).toEqual([]);
});
