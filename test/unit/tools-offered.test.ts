/**
 * The check of --tools / --tools-override against the server's first complete tools/list
 * (middleware/tools-offered.ts): pages followed by their cursors, listings that interleave, one
 * warning at most.
 */
import { expect, test } from "bun:test";
import { toolsPolicy } from "../../src/config/tools-policy.ts";
import { watchToolsOffered } from "../../src/middleware/tools-offered.ts";

function watched(tools: string[]) {
  const warnings: string[] = [];
  const policy = toolsPolicy(tools, undefined);
  if (policy === undefined) throw new Error("no policy");
  return { watch: watchToolsOffered(policy, (text) => warnings.push(text)), warnings };
}

test("a listing whose pages interleave with another client's is judged once its own last page arrives", () => {
  const { watch, warnings } = watched(["echo", "ech0"]);
  watch.page(undefined, ["add"], "p2");
  // A second client starts listing meanwhile, and stops after its first page.
  watch.page(undefined, ["add"], "p2-other");
  expect(watch.waiting).toBe(true);
  watch.page("p2", ["echo"], undefined);
  expect(watch.waiting).toBe(false);
  expect(warnings).toEqual([
    "--tools names ech0 (did you mean echo?), which the server does not offer, so clients do not get it (it lists 2 tools: add, echo); the names are the server's own, case included: correct the option and run the workload again",
  ]);
  // Later listings change nothing.
  watch.page(undefined, [], undefined);
  expect(warnings).toHaveLength(1);
});

test("a page of a listing the watch did not see begin counts for nothing", () => {
  const { watch, warnings } = watched(["echo"]);
  watch.page("made-up", ["other"], undefined);
  expect(watch.waiting).toBe(true);
  watch.page(undefined, ["echo"], undefined);
  expect(watch.waiting).toBe(false);
  expect(warnings).toEqual([]);
});

test("names only --tools-override gives are checked too, and an empty list says so", async () => {
  const { mkdtempSync, writeFileSync, rmSync } = await import("node:fs");
  const { join } = await import("node:path");
  const { tmpdir } = await import("node:os");
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-tools-offered-"));
  try {
    const file = join(dir, "overrides.json");
    writeFileSync(file, JSON.stringify({ toolsOverride: { search: { name: "find" } } }));
    const policy = toolsPolicy([], file);
    if (policy === undefined) throw new Error("no policy");
    const warnings: string[] = [];
    const watch = watchToolsOffered(policy, (text) => warnings.push(text));
    watch.page(undefined, [], undefined);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toStartWith("--tools-override names search, which the server does not offer");
    expect(warnings[0]).toContain("(it lists no tools at all)");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the server's tool names in the warning are one line each and cut short: a server cannot forge log lines or flood the log", () => {
  const { watch, warnings } = watched(["echo"]);
  const forged = "ech\n[error] forged line";
  watch.page(undefined, [forged, "x".repeat(100_000)], undefined);
  expect(warnings).toHaveLength(1);
  const warning = warnings[0] as string;
  expect(warning).not.toContain("\n");
  expect(warning).toContain("ech\\n[error] forged line");
  expect(warning.length).toBeLessThan(1_000);
});

test("a listing that pages on past 10,000 names is not followed further: the names held are bounded", () => {
  const { watch, warnings } = watched(["echo"]);
  watch.page(undefined, ["a"], "c0");
  let cursor = "c0";
  for (let page = 1; page <= 11; page++) {
    const next = `c${page}`;
    watch.page(
      cursor,
      Array.from({ length: 1_000 }, (_, i) => `tool-${page}-${i}`),
      next,
    );
    cursor = next;
  }
  // The chain was dropped once it held more than 10,000 names: its last page completes nothing.
  watch.page(cursor, ["echo"], undefined);
  expect(watch.waiting).toBe(true);
  expect(warnings).toEqual([]);
});
