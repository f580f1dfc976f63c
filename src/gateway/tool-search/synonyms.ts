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
popular trending hot top
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
route directions
company business corporation firm enterprise
currency money
paper article publication
information info details
configuration config settings
statistics stats
database db
message msg
`;

function buildThesaurus(text: string, normalise: (word: string) => string): ReadonlyMap<string, readonly string[]> {
  const related = new Map<string, Set<string>>();
  for (const line of text.split("\n")) {
    const terms = [
      ...new Set(
        line
          .split(/\s+/)
          .filter((word) => word.length > 0)
          .map(normalise),
      ),
    ];
    for (const term of terms) {
      const set = related.get(term) ?? new Set<string>();
      for (const other of terms) if (other !== term) set.add(other);
      related.set(term, set);
    }
  }
  return new Map([...related].map(([term, set]) => [term, [...set]]));
}

const STEMMED = buildThesaurus(groups, stem);
let exact: ReadonlyMap<string, readonly string[]> | undefined;

/** Terms that mean the same as `term` (stemmed, or exact words when stemming is off), not including itself. */
export function synonymsOf(term: string, stemmed = true): readonly string[] {
  if (stemmed) return STEMMED.get(term) ?? [];
  exact ??= buildThesaurus(groups, (word) => word);
  return exact.get(term) ?? [];
}
