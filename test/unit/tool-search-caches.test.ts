/**
 * Tool search's caches under abuse: a gateway client may send `find_tool` queries made of long made-up
 * words (junk, a base64 blob). Such words must neither fill the tokenizer's and the thesaurus's caches
 * nor cost Porter2 time, and no amount of unique words grows the caches past their bound.
 */
import { expect, test } from "bun:test";
import { queryTerms } from "../../src/gateway/tool-search/query.ts";
import { synonymCacheFootprint, synonymsOf } from "../../src/gateway/tool-search/synonyms.ts";
import {
  MAX_STEMMED_WORD_LENGTH,
  stem,
  tokenize,
  tokenizerCacheFootprint,
} from "../../src/gateway/tool-search/tokenizer.ts";

const options = { synonymWeight: 0.5, literalWeight: 0.5, stemming: true };

/** A lower-case made-up word of `length` letters, different for every `seed`. */
function madeUpWord(seed: number, length: number): string {
  return `${seed.toString(36).replace(/[0-9]/g, (digit) => "abcdefghij"[Number(digit)] ?? "")}q`
    .repeat(length)
    .slice(0, length);
}

test("queries of long made-up words leave the caches as they were", () => {
  const tokenizerBefore = tokenizerCacheFootprint();
  const synonymsBefore = synonymCacheFootprint();
  for (let i = 0; i < 2_000; i++) queryTerms(madeUpWord(i, 2_000), options);
  expect(tokenizerCacheFootprint()).toEqual(tokenizerBefore);
  expect(synonymCacheFootprint()).toEqual(synonymsBefore);
});

test("a word past the bound is a term as written (lower-cased); up to it, words are stemmed as before", () => {
  const long = `${"search".repeat(11)}ing`;
  expect(long.length).toBeGreaterThan(MAX_STEMMED_WORD_LENGTH);
  expect(tokenize(long.toUpperCase())).toEqual([long]);
  expect(stem(long)).toBe(long);
  const atTheBound = `${"search".repeat(10)}ing`;
  expect(atTheBound.length).toBeLessThanOrEqual(MAX_STEMMED_WORD_LENGTH);
  expect(tokenize(atTheBound)).toEqual(["search".repeat(10)]);
  expect(synonymsOf(madeUpWord(7, 2_000))).toEqual([]);
  // The longest thesaurus word, inflected, still reaches its set.
  expect(synonymsOf("configurations", false)).toContain("config");
  expect(synonymsOf("presentations", false)).toContain("slides");
});

test("however many unique words come, the caches stay within their bound", () => {
  for (let i = 0; i < 70_000; i++) queryTerms(madeUpWord(i, 12), options);
  const tokenizer = tokenizerCacheFootprint();
  // The stemmer's cache and one word cache per option combination, 50,000 entries each.
  expect(tokenizer.entries).toBeLessThanOrEqual(5 * 50_000);
  expect(tokenizer.keyChars).toBeLessThanOrEqual(tokenizer.entries * MAX_STEMMED_WORD_LENGTH);
  const synonyms = synonymCacheFootprint();
  expect(synonyms.entries).toBeLessThanOrEqual(10_000);
  expect(synonyms.keyChars).toBeLessThanOrEqual(synonyms.entries * 20);
});
