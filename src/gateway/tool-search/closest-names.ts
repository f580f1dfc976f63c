/**
 * "Did you mean": the known gateway names nearest to a name nobody serves. Two measures, because models
 * get names wrong in two ways: a typo or a wrong separator ("github-create_issue": edit distance), or the
 * right words in another order or without the workload prefix ("create_issue", "issue_create": shared words).
 */
import { editDistance } from "../../close-matches.ts";

function words(name: string): Set<string> {
  return new Set(
    name
      .replace(/(\p{Ll})(\p{Lu})/gu, "$1 $2")
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)
      .filter((word) => word.length > 0),
  );
}

function similarity(wanted: string, wantedWords: ReadonlySet<string>, candidate: string): number {
  const a = wanted.toLowerCase();
  const b = candidate.toLowerCase();
  const longest = Math.max(a.length, b.length, 1);
  const spelling = 1 - editDistance(a, b, longest) / longest;
  const candidateWords = words(candidate);
  let shared = 0;
  for (const word of wantedWords) if (candidateWords.has(word)) shared++;
  // Share of the wanted words found: a bare tool name matches its prefixed gateway name fully.
  const overlap = wantedWords.size === 0 ? 0 : shared / wantedWords.size;
  const suffix = b.endsWith(`_${a}`) ? 1 : 0;
  return Math.max(spelling, 0.9 * overlap + 0.1 * (shared / Math.max(candidateWords.size, 1)), suffix);
}

/** Up to `count` of `candidates` closest to `wanted`, best first; only reasonably close ones. */
export function closestNames(fullWanted: string, candidates: Iterable<string>, count = 3): string[] {
  // Tool names are short (MCP suggests at most 128 characters): a longer "name" is compared by its start,
  // so the quadratic edit distance stays cheap whatever a caller sends.
  const wanted = fullWanted.slice(0, 200);
  const wantedWords = words(wanted);
  const scored: { name: string; score: number }[] = [];
  for (const name of candidates) {
    const score = similarity(wanted, wantedWords, name);
    if (score >= 0.4) scored.push({ name, score });
  }
  scored.sort((x, y) => y.score - x.score || x.name.localeCompare(y.name));
  return scored.slice(0, count).map((entry) => entry.name);
}
