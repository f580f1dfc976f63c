/**
 * bench:tool-search's size figures: the search modules bundled and minified (with their parts, and ajv
 * for comparison), and the compiled binary with and without search mode.
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "../..");

const MODULES = [
  "src/gateway/tool-search/tool-index.ts",
  "src/gateway/tool-search/search-tools.ts",
  "src/gateway/tool-search/find-answer.ts",
  "src/gateway/tool-search/instructions.ts",
  "src/gateway/tool-search/embeddings.ts",
  "src/gateway/tool-search/search-mode.ts",
];
/**
 * The gateway's search-mode glue: counted in the compiled difference only (bundled alone it would drag in
 * what it imports, the tool filter and the body parser, which every binary has anyway).
 */
const GLUE = ["src/gateway/search.ts", "src/gateway/call-tool-rewrite.ts"];

/** Minified size of a bundle whose entry is `code` (resolved from the repository root). */
async function bundleSize(code: string): Promise<number> {
  // Inside node_modules (ignored by git) so that bare package names resolve from the repository's dependencies.
  const cache = join(root, "node_modules", ".cache");
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, "tool-search-size-"));
  try {
    const entry = join(dir, "entry.ts");
    writeFileSync(entry, code);
    const result = await Bun.build({ entrypoints: [entry], minify: true, target: "bun" });
    if (!result.success) throw new Error(result.logs.join("\n"));
    return (await result.outputs[0]!.text()).length;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Everything the gateway would import for search mode (stemmer and validator included), and its parts. */
export async function bundledSizes(): Promise<{ all: number; validator: number; stemmer: number; ajv: number }> {
  return {
    all: await bundleSize(MODULES.map((m, i) => `export * as m${i} from ${JSON.stringify(join(root, m))};`).join("\n")),
    validator: await bundleSize('export { Validator } from "@cfworker/json-schema";'),
    stemmer: await bundleSize('export { default } from "wink-porter2-stemmer";'),
    ajv: await bundleSize('export { default } from "ajv";'),
  };
}

/**
 * The compiled binary as shipped minus the same binary with search mode cut out (slow: two full compiles).
 * The gateway loads search mode with `import()` of its two glue modules, which a compile bundles all the
 * same; the second build replaces those two with empty modules, so everything only search mode uses (the
 * index, the stemmer, the validator, …) drops out of it.
 */
export async function compiledSizeAdded(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-tool-search-compile-"));
  try {
    const stub = join(dir, "stub.ts");
    writeFileSync(stub, "export {};\n");
    const glue = new Set(GLUE.map((m) => join(root, m)));
    const sizes: number[] = [];
    for (const withSearch of [true, false]) {
      const outfile = join(dir, `mcpmgr-${withSearch}`);
      const result = await Bun.build({
        entrypoints: [join(root, "src/main.ts")],
        compile: { outfile, autoloadDotenv: false, autoloadBunfig: false },
        minify: true,
        plugins: withSearch
          ? []
          : [
              {
                name: "without-search-mode",
                setup(build) {
                  build.onResolve({ filter: /(search|call-tool-rewrite)\.ts$/ }, (args) => {
                    const path = resolve(args.resolveDir, args.path);
                    return glue.has(path) ? { path: stub } : undefined;
                  });
                },
              },
            ],
      });
      if (!result.success) throw new Error(result.logs.join("\n"));
      sizes.push(statSync(outfile).size);
    }
    return (sizes[0] as number) - (sizes[1] as number);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
