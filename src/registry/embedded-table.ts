/**
 * `registry list`'s table when the registry is the embedded catalog alone, as text. registry list
 * imports this module as a Bun macro: the table is made when mcpmgr is bundled and inlined as a
 * string, so the common `registry list` does not parse, freeze, sort and lay out the catalog at every
 * start (bench `cli-startup`). It is the same functions of the same entries as at run time
 * (loader.ts `mergeRegistry`, describe.ts `entryTable`), which a custom registry still goes through.
 */
import { entryTable } from "./describe.ts";
import { validatedEmbeddedCatalog } from "./embedded.ts";
import { mergeRegistry } from "./loader.ts";

export function embeddedTableText(): string {
  const registry = mergeRegistry(validatedEmbeddedCatalog(), [], undefined);
  return entryTable(registry.list(), registry).join("\n");
}
