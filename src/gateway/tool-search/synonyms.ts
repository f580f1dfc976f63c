/**
 * A small, general thesaurus for queries: people ask for what they want in their words ("remove a
 * picture"), tool authors describe it in theirs ("delete an image"). Each line is a set of ordinary
 * English words, or a common abbreviation and its word, that mean the same thing when they name what a
 * tool does or what it works on. The list was written from everyday usage of tool verbs and objects
 * (CRUD verbs, media, documents, places), not from the benchmark's tools or tasks, and it must stay
 * that way: any tool set benefits or none does. Expanded terms weigh less than the user's own words.
 */
import { stem } from "./tokenizer.ts";

const groups = `
get fetch retrieve obtain
search find query lookup seek
create make generate
delete remove erase
update modify edit change alter
show display view
run execute launch invoke
write save store
convert transform
list enumerate
check verify validate
calculate compute
summary summarize summarise
analyze analyse analysis examine inspect
close stop terminate kill
insert add append
compare diff
visit browse navigate
image picture photo pic img
document doc docs
chart graph plot diagram
webpage page website site
location place position venue
popular trending trend hot top
price cost quote
news headline headlines
directory folder dir
presentation slides slide deck ppt pptx powerpoint
spreadsheet excel xlsx workbook sheet
email mail
repository repo
audio sound
music song
vehicle car
route directions direction
company business corporation firm enterprise
currency money
paper article publication
information info details detail
configuration config settings setting
statistics statistic stats
database db
message msg
`;

/**
 * The forms an English word may be an inflection of: itself, without a plural "s"/"es" ("ies" → "y"),
 * without "ing"/"ed" (with the "e" or the doubled consonant they took away). Only inflections: a
 * derivation often means something else ("locate" is not "location", "general" is not "generate"),
 * which is why the thesaurus is not looked up by Porter2 stem (it conflates both).
 */
export function inflectionBases(word: string): string[] {
  const bases = [word];
  const add = (base: string) => {
    if (base.length >= 2 && !bases.includes(base)) bases.push(base);
  };
  const undoSuffix = (base: string) => {
    add(base);
    add(`${base}e`);
    // "stopped" → "stop", "running" → "run": the doubled final consonant.
    if (/([b-df-hj-np-tv-z])\1$/.test(base)) add(base.slice(0, -1));
  };
  // "queries" → "query", but "movies" → "movie", "cookies" → "cookie": both are candidates.
  if (word.length > 4 && word.endsWith("ies")) {
    add(`${word.slice(0, -3)}y`);
    add(word.slice(0, -1));
  }
  // "-es" can be a plural only after s, x, z, ch, sh and o ("boxes", "watches"; but "uses", "caches"):
  // there both forms are candidates, elsewhere only the "s" goes ("runes" is not "run").
  else if (word.length > 3 && /(?:[sxzo]|[cs]h)es$/.test(word)) {
    add(word.slice(0, -2));
    add(word.slice(0, -1));
  } else if (word.length > 3 && word.endsWith("s") && !word.endsWith("ss")) add(word.slice(0, -1));
  if (word.length > 5 && word.endsWith("ing")) undoSuffix(word.slice(0, -3));
  if (word.length > 4 && word.endsWith("ied")) add(`${word.slice(0, -3)}y`);
  else if (word.length > 4 && word.endsWith("ed")) undoSuffix(word.slice(0, -2));
  return bases;
}

/** Word → the other words of its sets, as written. */
function buildThesaurus(text: string): ReadonlyMap<string, readonly string[]> {
  const related = new Map<string, Set<string>>();
  for (const line of text.split("\n")) {
    const words = [...new Set(line.split(/\s+/).filter((word) => word.length > 0))];
    for (const word of words) {
      const set = related.get(word) ?? new Set<string>();
      for (const other of words) if (other !== word) set.add(other);
      related.set(word, set);
    }
  }
  return new Map([...related].map(([word, set]) => [word, [...set]]));
}

const THESAURUS = buildThesaurus(groups);
/**
 * No word longer than this has an inflection base in the thesaurus: a base is at most 4 characters
 * shorter than its word ("stopping" → "stop"). Such words are answered without a lookup and not cached,
 * so that made-up long words in queries cannot fill the cache.
 */
const LONGEST_EXPANDABLE = Math.max(...[...THESAURUS.keys()].map((word) => word.length)) + 4;
const EXPANSIONS_LIMIT = 10_000;
const expansions = new Map<string, readonly string[]>();
const none: readonly string[] = Object.freeze([]);

/**
 * The words that mean the same as `word` (a lower-case query word as written, or an inflection of a
 * thesaurus word), as index terms: Porter2 stems, or exact words when stemming is off. Not itself.
 */
export function synonymsOf(word: string, stemmed = true): readonly string[] {
  if (word.length > LONGEST_EXPANDABLE) return none;
  const key = `${stemmed ? "s" : "w"}${word}`;
  const cached = expansions.get(key);
  if (cached) return cached;
  const own = stemmed ? stem(word) : word;
  const out = new Set<string>();
  for (const base of inflectionBases(word)) {
    for (const synonym of THESAURUS.get(base) ?? []) out.add(stemmed ? stem(synonym) : synonym);
  }
  out.delete(own);
  const found = [...out];
  if (expansions.size >= EXPANSIONS_LIMIT) expansions.clear();
  expansions.set(key, found);
  return found;
}

/** How many expansions are cached and the characters of their keys: for tests of the cache's bound. */
export function synonymCacheFootprint(): { readonly entries: number; readonly keyChars: number } {
  let keyChars = 0;
  for (const key of expansions.keys()) keyChars += key.length;
  return { entries: expansions.size, keyChars };
}
