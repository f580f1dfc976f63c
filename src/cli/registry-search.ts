/**
 * `mcpmgr registry search`: the registry's servers ranked for a free-text query, by the gateway's tool
 * search index (gateway/tool-search: tokenizer, Porter2 stems, thesaurus, BM25F, abbreviations and
 * misspellings) rather than a second engine. Each server is one workload of that index: its name and
 * description are the workload's, its declared tools are its tools, and one more document stands for the
 * server itself (its name, tags and qualified name as the name field, its description as the description),
 * so a server that declares no tools can be found too. A server ranks by its best document.
 * Loaded by `import()` from registry.ts: `registry list` and `info` do not pay for the index.
 */
import { closeMatches, didYouMean } from "../close-matches.ts";
import { MAX_QUERY_CHARS } from "../gateway/tool-search/query.ts";
import { type SearchableTool, ToolSearchIndex } from "../gateway/tool-search/tool-index.ts";
import type { RegistryEntry } from "../registry/entry.ts";

/** The document that stands for the server itself; its name cannot clash with a tool's (MCP names have no spaces). */
const SERVER_DOCUMENT = " server";

function serverDocument(entry: RegistryEntry): SearchableTool {
  const title = [entry.name, ...entry.tags, entry.qualifiedName ?? ""].join(" ");
  return { name: SERVER_DOCUMENT, title, description: entry.description };
}

/** The entries that match `query`, best first, at most `limit`. */
export function searchRegistry(
  entries: readonly RegistryEntry[],
  query: string,
  limit: number,
): readonly RegistryEntry[] {
  const index = new ToolSearchIndex();
  const byName = new Map<string, RegistryEntry>();
  for (const entry of entries) {
    byName.set(entry.name, entry);
    const tools = [serverDocument(entry), ...entry.tools.map((name) => ({ name }))];
    index.upsertWorkload(entry.name, entry.description, tools);
  }
  const ranked: RegistryEntry[] = [];
  const seen = new Set<string>();
  // Hits come best first: a server's first hit is its best document.
  for (const hit of index.search(query, { limit: index.toolCount })) {
    if (seen.has(hit.workload)) continue;
    seen.add(hit.workload);
    const entry = byName.get(hit.workload);
    if (entry !== undefined) ranked.push(entry);
    if (ranked.length >= limit) break;
  }
  return ranked;
}

/**
 * "did you mean …?" for query words that look like a mistyped server name ("githb", "filesytem"), unless
 * that server is already among the results. Undefined when there is nothing to suggest.
 */
export function serverNameSuggestion(
  query: string,
  names: readonly string[],
  shown: readonly RegistryEntry[],
): string | undefined {
  const known = new Set(names.map((name) => name.toLowerCase()));
  const shownNames = new Set(shown.map((entry) => entry.name));
  const suggestions = new Set<string>();
  // The words of the query's start only, like the index reads it: a pasted text costs no more than a query.
  for (const word of query.slice(0, MAX_QUERY_CHARS).toLowerCase().split(/\s+/)) {
    if (word.length < 3 || known.has(word)) continue;
    for (const name of closeMatches(word, names, { nearestOnly: true, limit: 3 }))
      if (!shownNames.has(name)) suggestions.add(name);
  }
  return didYouMean([...suggestions].slice(0, 3));
}
