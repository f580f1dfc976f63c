/**
 * "Did you mean …?" everywhere mcpmgr offers one: commands and options on the command line, registry
 * names and fields, gateway tool names. The distance is the optimal-string-alignment one (Levenshtein
 * plus the swap of two neighbours, the commonest typo: "lsit", "--proxy-prot").
 */

/** The edit distance of `a` and `b`, stopping early once it exceeds `max` (then max + 1 is returned). */
export function editDistance(a: string, b: string, max = Number.POSITIVE_INFINITY): number {
  if (a === b) return 0;
  if (Math.abs(a.length - b.length) > max) return max + 1;
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  let previous2 = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  let current = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        value = Math.min(value, (previous2[j - 2] as number) + 1);
      }
      current[j] = value;
      if (value < rowMin) rowMin = value;
    }
    if (rowMin > max) return max + 1;
    [previous2, previous, current] = [previous, current, previous2];
  }
  const distance = previous[b.length] as number;
  return distance > max ? max + 1 : distance;
}

export interface CloseMatchOptions {
  /** Edits a candidate may be away. Default: a third of the query's length, from 1 to 3. */
  readonly maxDistance?: number;
  /**
   * Also candidates that contain the query or are contained in it (both 3 characters or more), however
   * many edits apart: "context" finds "context7-remote" among registry names.
   */
  readonly substrings?: boolean;
  /** Only the candidates at the smallest distance found: the one obvious fix rather than a list. */
  readonly nearestOnly?: boolean;
  /** At most this many (default 5). */
  readonly limit?: number;
}

/** The candidates close to `query` (case ignored), nearest first, then in code-point order. */
export function closeMatches(
  query: string,
  candidates: Iterable<string>,
  options: CloseMatchOptions = {},
): readonly string[] {
  const wanted = query.toLowerCase();
  const max = options.maxDistance ?? Math.min(3, Math.max(1, Math.floor(wanted.length / 3)));
  const scored: { name: string; distance: number }[] = [];
  for (const name of new Set(candidates)) {
    const candidate = name.toLowerCase();
    const distance = editDistance(wanted, candidate, max);
    const related =
      options.substrings === true &&
      wanted.length >= 3 &&
      candidate.length >= 3 &&
      (candidate.includes(wanted) || wanted.includes(candidate));
    if (distance <= max || related) scored.push({ name, distance });
  }
  // Code-point order, not localeCompare: that would load ICU's collation data on a CLI error path.
  scored.sort((a, b) => a.distance - b.distance || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const best = scored[0]?.distance;
  const kept = options.nearestOnly ? scored.filter((item) => item.distance === best) : scored;
  return kept.slice(0, options.limit ?? 5).map((item) => item.name);
}

/** "did you mean 'list'?", "did you mean 'rm' or 'run'?"; undefined when there is nothing to suggest. */
export function didYouMean(suggestions: readonly string[]): string | undefined {
  if (suggestions.length === 0) return undefined;
  const last = suggestions.at(-1) as string;
  const list = suggestions.length === 1 ? last : `${suggestions.slice(0, -1).join(", ")} or ${last}`;
  return `did you mean ${list}?`;
}
