/**
 * The embedded catalog as the registry schema outputs it (defaults applied). loader.ts
 * imports this module as a Bun macro: the function runs when mcpmgr is bundled (or, from
 * source, transpiled), its result is inlined as a literal, and no start-up of `registry
 * list` or `run NAME` pays for validating the same 20-odd entries again (~4 ms). An
 * invalid catalog therefore fails the build instead of the user's command.
 */
import * as v from "valibot";
import { embeddedCatalog } from "./catalog.ts";
import { describeIssues } from "./issues.ts";
import { registryEntrySchema, type RegistryEntry } from "./schema.ts";

export function validatedEmbeddedCatalog(): RegistryEntry[] {
  return embeddedCatalog.map((input, index) => {
    const result = v.safeParse(registryEntrySchema, input);
    if (result.success) return result.output;
    throw new Error(`the embedded registry is invalid: ${describeIssues(result.issues, `[${index}]`)}`);
  });
}

/** The same as JSON text, the form loader.ts inlines (the catalog is plain JSON data: nothing is lost). */
export function validatedEmbeddedCatalogJson(): string {
  return JSON.stringify(validatedEmbeddedCatalog());
}
