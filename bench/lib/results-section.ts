/**
 * bench/RESULTS.md is shared: `bun run bench` writes the proxy figures, other benches own a section
 * each, marked `<!-- section:ID -->` … `<!-- /section:ID -->`. A bench replaces only its own section;
 * `bun run bench` keeps every marked section when it rewrites the rest.
 */
const SECTION = /<!-- section:([\w-]+) -->[\s\S]*?<!-- \/section:\1 -->\n?/g;

/** The marked sections of `text`, in order, to append after a rewrite. */
export function markedSections(text: string): string {
  return [...text.matchAll(SECTION)].map((match) => match[0].trimEnd()).join("\n\n");
}

/** `text` with section `id` replaced by `markdown` (appended when it is not there yet). */
export function replaceSection(text: string, id: string, markdown: string): string {
  const block = `<!-- section:${id} -->\n${markdown.trimEnd()}\n<!-- /section:${id} -->\n`;
  const pattern = new RegExp(`<!-- section:${id} -->[\\s\\S]*?<!-- /section:${id} -->\\n?`);
  if (pattern.test(text)) return text.replace(pattern, block);
  return `${text.trimEnd()}\n\n${block}`;
}
