/** "Did you mean …?" for registry names: edit distance, plus names that contain the query or the other way round. */

export function closeMatches(query: string, names: Iterable<string>, limit = 5): string[] {
  const wanted = query.toLowerCase();
  const scored: { name: string; score: number }[] = [];
  for (const name of names) {
    const candidate = name.toLowerCase();
    const distance = _levenshtein(wanted, candidate);
    const budget = Math.max(2, Math.floor(Math.max(wanted.length, candidate.length) / 3));
    // "context" finds "context7-remote" although many edits apart; ranking stays by distance.
    const related =
      wanted.length >= 3 && candidate.length >= 3 && (candidate.includes(wanted) || wanted.includes(candidate));
    if (distance <= budget || related) scored.push({ name, score: distance });
  }
  scored.sort((a, b) => a.score - b.score || a.name.localeCompare(b.name));
  return scored.slice(0, limit).map((item) => item.name);
}

function _levenshtein(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
