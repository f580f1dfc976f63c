/**
 * `registry list` prints a table made at build time when the registry is the embedded catalog alone
 * (registry/embedded-table.ts, a macro): it must be the table made at run time from the loaded registry.
 */
import { expect, test } from "bun:test";
import { entryTable } from "../../src/registry/describe.ts";
import { embeddedTableText } from "../../src/registry/embedded-table.ts";
import { loadRegistry } from "../../src/registry/loader.ts";

test("the build-time table of the embedded catalog is the run-time one", async () => {
  const registry = await loadRegistry();
  expect(registry.custom).toBeUndefined();
  const table = entryTable(registry.list(), registry);
  expect(table.length).toBeGreaterThan(10);
  expect(embeddedTableText()).toBe(table.join("\n"));
});
