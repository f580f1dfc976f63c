/**
 * A free-text query → weighted search terms. The user's own words weigh 1; words they imply weigh less:
 * - thesaurus expansions (synonyms.ts);
 * - what the kind of a literal in the query says: a file path or a file name with an extension means the
 *   task is about a file ("save it to /root/report.md" needs a tool that writes files), a URL means a web
 *   address. Tool descriptions say "file", "path" and "URL"; users paste the thing itself.
 */
import { synonymsOf } from "./synonyms.ts";
import { tokenize } from "./tokenizer.ts";

export interface QueryTerms {
  /** The query's own terms, in order (for phrase matching). */
  readonly own: readonly string[];
  /** Every term to look up, with its weight. */
  readonly weights: ReadonlyMap<string, number>;
}

export interface QueryOptions {
  readonly synonymWeight: number;
  readonly literalWeight: number;
  readonly stemming: boolean;
}

/**
 * Only the start of a query is read: a task description fits many times over, and a pasted document or
 * image (base64) must not cost more than a normal query.
 */
export const MAX_QUERY_CHARS = 2000;

const URL_LITERAL = /\b(?:https?:\/\/|www\.)\S{1,200}/i;
// "/root/a/b.md", "~/notes.txt", "C:\dir\file", "./src/", or a bare "report.docx" with a common extension
// (a list, so that "amazon.com" or "Node.js" are not taken for files).
const PATH_LITERAL =
  /(?:^|\s)(?:~|\.{1,2})?\/[\w.-]{1,100}\/|\b[A-Za-z]:\\|\b[\w-]{1,100}\.(?:md|txt|csv|tsv|json|ya?ml|xml|html?|pdf|docx?|xlsx?|pptx?|odt|rtf|png|jpe?g|gif|svg|webp|mp3|wav|flac|mp4|mov|zip|tar|gz|log|bib|py|js|ts|sh)\b/i;

function impliedWords(query: string): string[] {
  const words: string[] = [];
  const withoutUrls = query.replace(new RegExp(URL_LITERAL.source, "gi"), " ");
  if (URL_LITERAL.test(query)) words.push("url", "web");
  if (PATH_LITERAL.test(withoutUrls)) words.push("file", "path");
  return words;
}

export function queryTerms(fullQuery: string, options: QueryOptions): QueryTerms {
  const query = fullQuery.length > MAX_QUERY_CHARS ? fullQuery.slice(0, MAX_QUERY_CHARS) : fullQuery;
  const stem = options.stemming;
  const own = tokenize(query, { stem });
  const weights = new Map<string, number>();
  for (const term of own) weights.set(term, 1);
  const add = (term: string, weight: number) => {
    if ((weights.get(term) ?? 0) < weight) weights.set(term, weight);
  };
  if (options.literalWeight > 0)
    for (const term of tokenize(impliedWords(query).join(" "), { stem })) add(term, options.literalWeight);
  if (options.synonymWeight > 0) {
    // The thesaurus is keyed by words as written (and their inflections), not by stems: see synonyms.ts.
    for (const word of tokenize(query, { stem: false })) {
      for (const synonym of synonymsOf(word, stem)) add(synonym, options.synonymWeight);
    }
  }
  return { own, weights };
}
