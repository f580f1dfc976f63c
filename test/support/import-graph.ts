/**
 * The static import graph of src/: what evaluating a module evaluates with it. The compiled
 * executable is split into chunks, so a module behind `import()` or a `require` inside a
 * function is evaluated only when that code runs; a static import is paid by every importer.
 */
import { dirname, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../../src");

/**
 * Static value imports and re-exports of a module. Not followed: `import type`, `import()`,
 * and Bun macros (`with { type: "macro" }`: run when mcpmgr is built, their result inlined).
 */
function staticImports(text: string): string[] {
  const specs: string[] = [];
  for (const match of text.matchAll(
    /(?:^|\n)\s*(?:import|export)(?!\s+type\b)[^"'`;]*?\bfrom\s+["']([^"']+)["'](\s*with\s*\{\s*type:\s*["']macro["'])?/g,
  ))
    if (match[2] === undefined) specs.push(match[1] as string);
  for (const match of text.matchAll(/(?:^|\n)\s*import\s+["']([^"']+)["']/g)) specs.push(match[1] as string);
  return specs;
}

/** Every module (src/ path, or package / node: built-in) the graph from `entries` (src/ paths) evaluates. */
export async function reachable(entries: readonly string[]): Promise<Set<string>> {
  const seen = new Set<string>();
  const queue = entries.map((entry) => resolve(SRC, entry));
  while (queue.length > 0) {
    const file = queue.pop() as string;
    const key = relative(SRC, file);
    if (seen.has(key)) continue;
    seen.add(key);
    for (const spec of staticImports(await Bun.file(file).text())) {
      if (!spec.startsWith(".")) seen.add(spec);
      else if (!spec.endsWith(".json")) queue.push(resolve(dirname(file), spec));
    }
  }
  return seen;
}
