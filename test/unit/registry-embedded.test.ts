/**
 * The embedded catalog is validated when mcpmgr is built (a Bun macro in loader.ts): what
 * the loader serves must be exactly what the schema outputs for the catalog now, frozen.
 */
import { expect, test } from "bun:test";
import { embeddedCatalog } from "../../src/registry/catalog.ts";
import { validatedEmbeddedCatalog } from "../../src/registry/embedded.ts";
import { embeddedEntries } from "../../src/registry/loader.ts";

test("the loader's embedded entries are the schema's output for the catalog, field for field", () => {
  const served = embeddedEntries();
  expect(served).toHaveLength(embeddedCatalog.length);
  expect(served).toStrictEqual(validatedEmbeddedCatalog());
});

test("the embedded entries are frozen, nested objects too", () => {
  const [first] = embeddedEntries();
  expect(Object.isFrozen(embeddedEntries())).toBe(true);
  expect(Object.isFrozen(first)).toBe(true);
  expect(Object.isFrozen(first?.tools)).toBe(true);
  expect(Object.isFrozen(first?.source)).toBe(true);
});
