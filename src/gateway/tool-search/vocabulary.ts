/**
 * The index's terms, for the query words that do not match one exactly:
 * - a short form matches the longer words it starts ("wiki" → wikipedia, "calc" → calculator): users
 *   abbreviate, tool authors spell out;
 * - a word the index does not know at all is probably misspelt ("broswer", "informatin"): it matches the
 *   known words within one edit (two for long words).
 * Expansions are cached per term until the index changes.
 */
import { editDistance } from "../../close-matches.ts";

export interface Expansion {
  readonly term: string;
  /** 0..1: how much of a match this is. */
  readonly closeness: number;
}

const MIN_PREFIX = 4;
const MAX_PREFIX_EXPANSIONS = 8;
const MIN_FUZZY = 5;

export class Vocabulary {
  readonly #sorted: readonly string[];
  readonly #known: ReadonlySet<string>;
  readonly #byLength = new Map<number, string[]>();
  readonly #cache = new Map<string, readonly Expansion[]>();

  constructor(terms: Iterable<string>) {
    this.#known = new Set(terms);
    this.#sorted = [...this.#known].sort();
    for (const term of this.#sorted) {
      const list = this.#byLength.get(term.length);
      if (list) list.push(term);
      else this.#byLength.set(term.length, [term]);
    }
  }

  has(term: string): boolean {
    return this.#known.has(term);
  }

  /** Other index terms that `term` probably means, best first; none for terms that are not Latin words. */
  expansions(term: string): readonly Expansion[] {
    const cached = this.#cache.get(term);
    if (cached) return cached;
    const found = /^[a-z]+$/.test(term) ? [...this.#prefixed(term), ...this.#misspelt(term)] : [];
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(term, found);
    return found;
  }

  #prefixed(term: string): Expansion[] {
    if (term.length < MIN_PREFIX) return [];
    const out: Expansion[] = [];
    let low = 0;
    let high = this.#sorted.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((this.#sorted[middle] as string) < term) low = middle + 1;
      else high = middle;
    }
    for (let i = low; i < this.#sorted.length; i++) {
      const candidate = this.#sorted[i] as string;
      if (!candidate.startsWith(term)) break;
      if (candidate !== term) out.push({ term: candidate, closeness: term.length / candidate.length });
    }
    return out.sort((a, b) => b.closeness - a.closeness).slice(0, MAX_PREFIX_EXPANSIONS);
  }

  #misspelt(term: string): Expansion[] {
    if (term.length < MIN_FUZZY || this.#known.has(term)) return [];
    const max = term.length >= 8 ? 2 : 1;
    const out: Expansion[] = [];
    for (let length = term.length - max; length <= term.length + max; length++) {
      for (const candidate of this.#byLength.get(length) ?? []) {
        const distance = editDistance(term, candidate, max);
        if (distance <= max) out.push({ term: candidate, closeness: 1 - distance / (max + 1) });
      }
    }
    return out;
  }
}
