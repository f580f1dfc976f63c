/**
 * Text → search terms, the same way for tool text and queries:
 * - identifiers split where people see words: `_`, `-`, `.`, `/`, camelCase (`getHTTPStatus` → get http status)
 *   and letter/digit boundaries (`base64` → base 64, `mp3` → mp 3); a run of digits stays one term (`12306`);
 * - lower-cased, English stop words dropped, English words stemmed (Porter2, so "searching", "searches" and
 *   "searched" are one term);
 * - text without spaces (Chinese, Japanese, Korean) becomes overlapping character bigrams ("必应搜索" →
 *   必应 应搜 搜索), the usual way to index it without a dictionary; a lone character stays a unigram.
 * Pure and synchronous; stems are memoised because tool text repeats the same words.
 */
import stemPorter2 from "wink-porter2-stemmer";
import { isStopWord } from "./stop-words.ts";

const CJK_RUN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]+/gu;
const CJK_CHAR = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;
// Letters of scripts that separate words with spaces, and digits: the pieces of an ordinary word.
const WORD = /[\p{L}\p{M}\p{N}]+/gu;

const stems = new Map<string, string>();
const STEM_CACHE_LIMIT = 50_000;

/**
 * Longer words are kept as written (lower-cased), neither stemmed nor cached: no English word is this
 * long, and a client sending long made-up words (a base64 blob, junk) would otherwise fill the caches
 * with them (up to 2,000 characters each, for every cache entry) and cost milliseconds of Porter2 each.
 */
export const MAX_STEMMED_WORD_LENGTH = 64;

/**
 * Porter2 stem of a lower-case word; words with digits or non-Latin letters, and words longer than
 * MAX_STEMMED_WORD_LENGTH, are kept as they are.
 */
export function stem(word: string): string {
  if (word.length < 3 || word.length > MAX_STEMMED_WORD_LENGTH || !/^[a-z]+$/.test(word)) return word;
  let stemmed = stems.get(word);
  if (stemmed === undefined) {
    stemmed = stemPorter2(word);
    if (stems.size >= STEM_CACHE_LIMIT) stems.clear();
    stems.set(word, stemmed);
  }
  return stemmed;
}

const ASCII_ONLY = /^[\x00-\x7f]*$/;
const ASCII_SEPARATORS = /[^A-Za-z0-9]+/;

/** Splits camelCase and letter/digit boundaries: "getHTTPStatus2xx" → "get HTTP Status 2 xx". */
function splitIdentifierCase(text: string): string {
  // Most tool text is ASCII: the same splits without Unicode property classes run several times faster.
  if (ASCII_ONLY.test(text)) {
    return text
      .replace(/([a-z])([A-Z])/g, "$1 $2")
      .replace(/([A-Z])([A-Z][a-z])/g, "$1 $2")
      .replace(/([A-Za-z])([0-9])/g, "$1 $2")
      .replace(/([0-9])([A-Za-z])/g, "$1 $2");
  }
  return text
    .replace(/(\p{Ll})(\p{Lu})/gu, "$1 $2")
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, "$1 $2")
    .replace(/(\p{L})(\p{N})/gu, "$1 $2")
    .replace(/(\p{N})(\p{L})/gu, "$1 $2");
}

function pushCjkBigrams(run: string, out: string[]): void {
  const chars = [...run];
  if (chars.length === 1) {
    out.push(run);
    return;
  }
  for (let i = 0; i + 1 < chars.length; i++) out.push(`${chars[i]}${chars[i + 1]}`);
}

/** Whether a term comes from text without spaces (a CJK bigram or character). */
export function isCjkTerm(term: string): boolean {
  return CJK_CHAR.test(term);
}

export interface TokenizeOptions {
  /** Drop English stop words (default true). Tool names keep them: "get", "set" are meaningful there. */
  readonly stopWords?: boolean;
  /** Stem English words (default true). */
  readonly stem?: boolean;
}

/** The terms of `text`, in order (duplicates kept: term frequency matters). */
export function tokenize(text: string, options: TokenizeOptions = {}): string[] {
  const dropStopWords = options.stopWords ?? true;
  const doStem = options.stem ?? true;
  const out: string[] = [];
  if (ASCII_ONLY.test(text)) {
    for (const word of splitIdentifierCase(text).split(ASCII_SEPARATORS)) {
      if (word.length > 0) pushWord(word, out, dropStopWords, doStem);
    }
    return out;
  }
  for (const [word] of splitIdentifierCase(text).matchAll(WORD)) {
    if (CJK_CHAR.test(word)) {
      // A CJK run may carry Latin or digits glued to it ("从bing_search返回的结果ID"): split them apart.
      let last = 0;
      for (const match of word.matchAll(CJK_RUN)) {
        const index = match.index ?? 0;
        if (index > last) pushWord(word.slice(last, index), out, dropStopWords, doStem);
        pushCjkBigrams(match[0], out);
        last = index + match[0].length;
      }
      if (last < word.length) pushWord(word.slice(last), out, dropStopWords, doStem);
    } else {
      pushWord(word, out, dropStopWords, doStem);
    }
  }
  return out;
}

// Word as written → its term ("" for a stop word), one map per option combination: tool text repeats
// the same words, and one lookup is cheaper than lower-casing, the stop-word check and the stemmer's cache.
const wordTerms = [
  new Map<string, string>(),
  new Map<string, string>(),
  new Map<string, string>(),
  new Map<string, string>(),
];

function pushWord(word: string, out: string[], dropStopWords: boolean, doStem: boolean): void {
  if (word.length > MAX_STEMMED_WORD_LENGTH) {
    // Kept as written and not cached (see MAX_STEMMED_WORD_LENGTH); no stop word is that long.
    out.push(word.toLowerCase());
    return;
  }
  const cache = wordTerms[(dropStopWords ? 2 : 0) + (doStem ? 1 : 0)] as Map<string, string>;
  let term = cache.get(word);
  if (term === undefined) {
    const lower = word.toLowerCase();
    term = dropStopWords && isStopWord(lower) ? "" : doStem ? stem(lower) : lower;
    if (cache.size >= STEM_CACHE_LIMIT) cache.clear();
    cache.set(word, term);
  }
  if (term !== "") out.push(term);
}

/** How many entries the tokenizer's caches hold and the characters of their keys: for tests of their bound. */
export function tokenizerCacheFootprint(): { readonly entries: number; readonly keyChars: number } {
  let entries = 0;
  let keyChars = 0;
  for (const cache of [stems, ...wordTerms]) {
    entries += cache.size;
    for (const key of cache.keys()) keyChars += key.length;
  }
  return { entries, keyChars };
}
