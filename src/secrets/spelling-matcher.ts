/**
 * Finds every spelling of every secret value in a text in one pass (redact.ts). A spelling is looked
 * for by four of its characters (a key): one scan keeps the last four characters of the text as a
 * 32-bit number, and only where a table says some spelling has them as its key is that spelling
 * compared. The cost of a text is its length, whatever the number of spellings (a token per client
 * under token exchange: thousands). Each spelling takes a key no other has when it can (the tokens of
 * one issuer share a long header, some values share an ending), so a place in the text is compared
 * with one spelling or none. With a few spellings, a native `indexOf` per spelling is faster than a
 * scan in JavaScript, and is used instead.
 */
import { MIN_REDACT_LENGTH } from "./spellings.ts";

/** Up to this many spellings, one `indexOf` per spelling beats the scan (bench/redact.ts). */
const SEARCH_EACH_UP_TO = 24;
/** The table has at least this many slots per key: few false hits (each a Map lookup), 16 KB for 256 keys. */
const SLOTS_PER_KEY = 16;
const MIN_TABLE_BITS = 10;

/** The four characters before `end`, one byte each (the low byte: a hit is compared anyway). */
function keyAt(text: string, end: number): number {
  return (
    (((text.charCodeAt(end - 4) & 0xff) << 24) |
      ((text.charCodeAt(end - 3) & 0xff) << 16) |
      ((text.charCodeAt(end - 2) & 0xff) << 8) |
      (text.charCodeAt(end - 1) & 0xff)) >>>
    0
  );
}

export class SpellingMatcher {
  /** Spelling → how many values have it (two values may share one: a value and its own percent-encoding). */
  readonly #counts = new Map<string, number>();
  /** Key → the spellings that have it, each with how many of its characters follow the key. */
  readonly #byKey = new Map<number, Keyed[]>();
  /** Spelling → where its key ends in it. */
  readonly #keyEnds = new Map<string, number>();
  /** Slot (the key's top bits after a multiplication) → how many keys fall there; 0: no spelling ends here. */
  /** Empty until the first key (most workloads redact nothing): the first add() sizes it. */
  #slots = new Uint16Array(0);
  #shift = 32 - MIN_TABLE_BITS;

  get size(): number {
    return this.#counts.size;
  }

  add(spelling: string): void {
    if (spelling.length < MIN_REDACT_LENGTH) return;
    const count = this.#counts.get(spelling) ?? 0;
    this.#counts.set(spelling, count + 1);
    if (count > 0) return;
    const end = this.#keyEnd(spelling);
    this.#keyEnds.set(spelling, end);
    const key = keyAt(spelling, end);
    const keyed = { spelling, after: spelling.length - end };
    const bucket = this.#byKey.get(key);
    if (bucket !== undefined) {
      bucket.push(keyed);
      return;
    }
    this.#byKey.set(key, [keyed]);
    if (this.#byKey.size * SLOTS_PER_KEY > this.#slots.length) this.#resize();
    else this.#slots[this.#slot(key)] = (this.#slots[this.#slot(key)] as number) + 1;
  }

  /** Where the key of a new spelling ends: its last four characters, or the nearest four no other spelling has. */
  #keyEnd(spelling: string): number {
    let best = spelling.length;
    let fewest = Number.POSITIVE_INFINITY;
    for (let end = spelling.length; end >= 4; end--) {
      const others = this.#byKey.get(keyAt(spelling, end))?.length ?? 0;
      if (others === 0) return end;
      if (others < fewest) {
        best = end;
        fewest = others;
      }
    }
    return best;
  }

  delete(spelling: string): void {
    const count = this.#counts.get(spelling);
    if (count === undefined) return;
    if (count > 1) {
      this.#counts.set(spelling, count - 1);
      return;
    }
    this.#counts.delete(spelling);
    const key = keyAt(spelling, this.#keyEnds.get(spelling) as number);
    this.#keyEnds.delete(spelling);
    const bucket = this.#byKey.get(key) ?? [];
    const left = bucket.filter((other) => other.spelling !== spelling);
    if (left.length > 0) {
      this.#byKey.set(key, left);
      return;
    }
    this.#byKey.delete(key);
    this.#slots[this.#slot(key)] = (this.#slots[this.#slot(key)] as number) - 1;
  }

  /**
   * `text` with every place any spelling covers replaced by `replacement`: places that overlap are one
   * (a value holding another, or two values that overlap, hidden whole); places side by side are one each.
   */
  replace(text: string, replacement: string): string {
    if (this.#counts.size === 0) return text;
    const found = this.#counts.size <= SEARCH_EACH_UP_TO ? this.#searchEach(text) : this.#scan(text);
    if (found.length === 0) return text;
    return cover(text, found, replacement);
  }

  /** Start and end of each place found, as pairs, by start. */
  #searchEach(text: string): number[] {
    const found: number[] = [];
    for (const spelling of this.#counts.keys()) {
      for (let at = text.indexOf(spelling); at !== -1; at = text.indexOf(spelling, at + 1)) {
        found.push(at, at + spelling.length);
      }
    }
    if (found.length > 2) sortPairs(found);
    return found;
  }

  /** The same in one pass; sorted by start for cover(). */
  #scan(text: string): number[] {
    const found: number[] = [];
    const slots = this.#slots;
    const shift = this.#shift;
    const byKey = this.#byKey;
    const length = text.length;
    let key = 0;
    for (let i = 0; i < 3 && i < length; i++) key = (key << 8) | (text.charCodeAt(i) & 0xff);
    for (let i = 3; i < length; i++) {
      key = (key << 8) | (text.charCodeAt(i) & 0xff);
      if (slots[Math.imul(key, 0x9e3779b1) >>> shift] === 0) continue;
      const bucket = byKey.get(key >>> 0);
      if (bucket === undefined) continue;
      for (const { spelling, after } of bucket) {
        const end = i + 1 + after;
        const start = end - spelling.length;
        if (start >= 0 && end <= length && text.startsWith(spelling, start)) found.push(start, end);
      }
    }
    if (found.length > 2) sortPairs(found);
    return found;
  }

  #slot(key: number): number {
    return Math.imul(key, 0x9e3779b1) >>> this.#shift;
  }

  #resize(): void {
    let bits = MIN_TABLE_BITS;
    while (1 << bits < this.#byKey.size * SLOTS_PER_KEY * 2) bits++;
    this.#slots = new Uint16Array(1 << bits);
    this.#shift = 32 - bits;
    for (const key of this.#byKey.keys()) this.#slots[this.#slot(key)] = (this.#slots[this.#slot(key)] as number) + 1;
  }
}

interface Keyed {
  readonly spelling: string;
  readonly after: number;
}

function sortPairs(pairs: number[]): void {
  const order: [number, number][] = [];
  for (let i = 0; i < pairs.length; i += 2) order.push([pairs[i] as number, pairs[i + 1] as number]);
  order.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  order.forEach(([start, end], i) => {
    pairs[2 * i] = start;
    pairs[2 * i + 1] = end;
  });
}

/** `text` with each run of overlapping places (pairs by start) replaced once. */
function cover(text: string, found: number[], replacement: string): string {
  let out = "";
  let done = 0;
  let start = found[0] as number;
  let end = found[1] as number;
  for (let i = 2; i <= found.length; i += 2) {
    const next = found[i];
    if (next !== undefined && next < end) {
      end = Math.max(end, found[i + 1] as number);
      continue;
    }
    out += text.slice(done, start) + replacement;
    done = end;
    if (next !== undefined) {
      start = next;
      end = found[i + 1] as number;
    }
  }
  return out + text.slice(done);
}
