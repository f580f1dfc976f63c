/** bench/RESULTS.md: a run replaces the sections it measured and keeps the others. */
import { expect, test } from "bun:test";
import { mergeResults } from "../../bench/lib/startup.ts";

const HEADER = "# mcpmgr benchmark results\n\nintro\n\n";

test("a cli-startup run keeps the load section of an earlier run", () => {
  const before = mergeResults(undefined, HEADER, { load: "## Run of 1\n\nload table", "cli-startup": "## CLI old" });
  const after = mergeResults(before, HEADER, { "cli-startup": "## CLI new" });
  expect(after).toBe(
    `${HEADER}<!-- bench:load -->\n## Run of 1\n\nload table\n<!-- /bench:load -->\n\n<!-- bench:cli-startup -->\n## CLI new\n<!-- /bench:cli-startup -->\n`,
  );
});

test("a load run keeps the cli-startup section, which stays last", () => {
  const before = mergeResults(undefined, HEADER, { "cli-startup": "## CLI 1" });
  const after = mergeResults(before, HEADER, { load: "## Run of 2" });
  expect(after.indexOf("## Run of 2")).toBeLessThan(after.indexOf("## CLI 1"));
  expect(after).toContain("## CLI 1");
});

test("a file written before the sections existed becomes the load section", () => {
  const old =
    "# mcpmgr benchmark results\n\nWritten by `bun run bench`; the latest run replaces this file.\n\n## Run of 3\n\ntable\n";
  const after = mergeResults(old, HEADER, { "cli-startup": "## CLI 2" });
  expect(after).toBe(
    `${HEADER}<!-- bench:load -->\n## Run of 3\n\ntable\n<!-- /bench:load -->\n\n<!-- bench:cli-startup -->\n## CLI 2\n<!-- /bench:cli-startup -->\n`,
  );
});
