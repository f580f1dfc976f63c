/** bench/RESULTS.md: one marked section per part; a run replaces the sections it measured and keeps the others. */
import { expect, test } from "bun:test";
import { RESULTS_HEADER, replaceSection, replaceSections } from "../../bench/lib/results-section.ts";

const block = (id: string, markdown: string) => `<!-- section:${id} -->\n${markdown}\n<!-- /section:${id} -->\n`;

test("a cli-startup run keeps the load and tool-search sections where they are", () => {
  const before = `${RESULTS_HEADER}\n${block("load", "## Run of 1\n\nload table")}\n${block("cli-startup", "## CLI old")}\n${block("tool-search", "## Tool search")}`;
  const after = replaceSections(before, { "cli-startup": "## CLI new" });
  expect(after).toBe(before.replace("## CLI old", "## CLI new"));
});

test("a load run replaces the load section and keeps the others", () => {
  const before = `${RESULTS_HEADER}\n${block("load", "## Run of 1")}\n${block("cli-startup", "## CLI 1")}\n${block("tool-search", "## Tool search")}`;
  const after = replaceSections(before, { load: "## Run of 2\n\n### Scenarios" });
  expect(after).toContain("## Run of 2\n\n### Scenarios");
  expect(after).not.toContain("## Run of 1");
  expect(after).toContain(block("cli-startup", "## CLI 1"));
  expect(after).toContain(block("tool-search", "## Tool search"));
});

test("a section not yet in the file is appended after the others", () => {
  const after = replaceSections(`${RESULTS_HEADER}\n${block("tool-search", "## Tool search")}`, {
    load: "## Run of 3",
    "cli-startup": "## CLI 3",
  });
  expect(after.indexOf("## Tool search")).toBeLessThan(after.indexOf("## Run of 3"));
  expect(after.indexOf("## Run of 3")).toBeLessThan(after.indexOf("## CLI 3"));
  expect(after.startsWith(RESULTS_HEADER)).toBe(true);
});

test("figures with $ patterns are written as they are", () => {
  const after = replaceSection(block("load", "old"), "load", "cost $& and $' stay");
  expect(after).toBe(block("load", "cost $& and $' stay"));
});
