/**
 * bench/RESULTS.md is shared by the benches, one marked section per part:
 * `<!-- section:ID -->` … `<!-- /section:ID -->`. `bun run bench` owns `load` (the load and
 * footprint scenarios) and `cli-startup`, `bun run bench:tool-search` owns `tool-search`. A
 * run replaces only the sections it measured and leaves everything else as it was, so a
 * `BENCH_SCENARIOS=cli-startup` run keeps the load figures and a load run keeps the others.
 */

/** What a new RESULTS.md starts with, before its first section. */
export const RESULTS_HEADER =
  "# mcpmgr benchmark results\n\nWritten by `bun run bench` (see [README.md](README.md)) and `bun run bench:tool-search`; each section is marked, and a run replaces only the sections it measured.\n";

function sectionPattern(id: string): RegExp {
  return new RegExp(`<!-- section:${id} -->[\\s\\S]*?<!-- /section:${id} -->\\n?`);
}

/** `text` with section `id` replaced by `markdown` (appended when it is not there yet). */
export function replaceSection(text: string, id: string, markdown: string): string {
  const block = `<!-- section:${id} -->\n${markdown.trimEnd()}\n<!-- /section:${id} -->\n`;
  const pattern = sectionPattern(id);
  // A function, not a string: `$` in the figures must not be read as a replacement pattern.
  if (pattern.test(text)) return text.replace(pattern, () => block);
  return `${text.trimEnd()}\n\n${block}`;
}

/** `text` with each of `sections` (id → markdown) replaced or appended, in the order given. */
export function replaceSections(text: string, sections: Readonly<Record<string, string>>): string {
  return Object.entries(sections).reduce((result, [id, markdown]) => replaceSection(result, id, markdown), text);
}
