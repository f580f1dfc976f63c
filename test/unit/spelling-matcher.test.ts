/** spelling-matcher.ts: every place of every spelling found, with few spellings (indexOf each) and many (one scan). */
import { expect, setDefaultTimeout, test } from "bun:test";
import { SpellingMatcher } from "../../src/secrets/spelling-matcher.ts";
import {
  COLLECTED_HARD_COUNT,
  COLLECTED_IN_FLIGHT_MS,
  collectingRedactor,
  learningRedactor,
  REDACTED,
  redact,
  redactor,
} from "../../src/secrets/redact.ts";

setDefaultTimeout(60_000);

/** What the matcher must give: each character any spelling covers hidden, overlapping places hidden as one. */
function reference(text: string, spellings: readonly string[]): string {
  const covered = new Array<number>(text.length + 1).fill(-1);
  for (const spelling of spellings) {
    for (let at = text.indexOf(spelling); at !== -1; at = text.indexOf(spelling, at + 1)) {
      for (let i = at; i < at + spelling.length; i++) covered[i] = Math.max(covered[i] as number, at + spelling.length);
    }
  }
  let out = "";
  for (let i = 0; i < text.length; ) {
    if (covered[i] === -1) {
      out += text[i];
      i++;
      continue;
    }
    let end = covered[i] as number;
    for (let j = i; j < end; j++) end = Math.max(end, covered[j] as number);
    out += REDACTED;
    i = end;
  }
  return out;
}

/** A small alphabet, so that spellings share keys, endings and overlap each other in the text. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
}

test("finds what the reference finds, with few spellings and with many, overlapping and side by side", () => {
  const next = random(79);
  const word = (length: number) => Array.from({ length }, () => 'abcdé\\"%'[Math.floor(next() * 8)]).join("");
  for (const count of [1, 5, 24, 25, 300]) {
    const spellings = Array.from({ length: count }, () => word(4 + Math.floor(next() * 12)));
    const matcher = new SpellingMatcher();
    for (const spelling of spellings) matcher.add(spelling);
    for (let round = 0; round < 40; round++) {
      let text = "";
      while (text.length < 400) text += next() < 0.3 ? (spellings[Math.floor(next() * count)] as string) : word(3);
      expect(matcher.replace(text, REDACTED)).toBe(reference(text, spellings));
    }
  }
});

test("a spelling taken out is no longer found; one two values share stays until both are gone", () => {
  const matcher = new SpellingMatcher();
  const many = Array.from({ length: 100 }, (_, i) => `token-${i}-${"q".repeat(40)}`);
  for (const spelling of many) matcher.add(spelling);
  matcher.add("shared-spelling");
  matcher.add("shared-spelling");
  matcher.delete(many[7] as string);
  matcher.delete("shared-spelling");
  expect(matcher.replace(`${many[7]} ${many[8]} shared-spelling`, REDACTED)).toBe(`${many[7]} *** ***`);
  matcher.delete("shared-spelling");
  expect(matcher.replace("shared-spelling", REDACTED)).toBe("shared-spelling");
  for (const spelling of many) matcher.delete(spelling);
  expect(matcher.size).toBe(0);
  expect(matcher.replace(many[8] as string, REDACTED)).toBe(many[8] as string);
});

test("every spelling of a value is found among thousands of values that share its header and ending", () => {
  // Tokens of one issuer: the same header, the same padding; only the middle differs.
  const tokens = Array.from(
    { length: 3000 },
    (_, i) => `eyJhbGciOiJSUzI1NiJ9.${String(i).padStart(6, "0")}.${"s".repeat(40)}`,
  );
  const value = 'pa"ss\\wörd&<end>\nsecond-line-of-it';
  const scrub = redactor([...tokens, value]);
  const once = JSON.stringify(value).slice(1, -1);
  const spellings = [
    value,
    once,
    JSON.stringify(once).slice(1, -1),
    once.replace("ö", "\\u00f6"),
    once.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e"),
    encodeURIComponent(value),
  ];
  for (const spelling of spellings) expect(scrub(`config ${spelling} done`)).toBe(`config ${REDACTED} done`);
  expect(scrub("line: second-line-of-it\n")).toBe(`line: ${REDACTED}\n`);
  expect(scrub(`a ${tokens[0]} b ${tokens[2999]}${tokens[1500]}`)).toBe(`a ${REDACTED} b ${REDACTED}${REDACTED}`);
  expect(scrub(`eyJhbGciOiJSUzI1NiJ9.000001.${"s".repeat(39)}`)).not.toContain(REDACTED);
});

test("values that overlap in a text are hidden whole, whatever their order", () => {
  expect(redact("ABCDEFGH", ["ABCDEF", "DEFGH"])).toBe(REDACTED);
  expect(redact("ABCDEFGH", ["DEFGH", "ABCDEF"])).toBe(REDACTED);
  expect(redact("tokentoken", ["token"])).toBe(`${REDACTED}${REDACTED}`);
});

test("a learning redactor keeps what it keeps when its values change one at a time", () => {
  const learning = learningRedactor(["always-kept"]);
  for (let i = 0; i < 40; i++) learning.learn([`access-${i}`, "refresh-kept"]);
  expect(learning.redact("always-kept refresh-kept access-39 access-31 access-30")).toBe("*** *** *** *** access-30");
});

test("a collecting redactor given more new values than it tracks between two records redoes its set whole, and keeps the right ones", () => {
  let now = 0;
  const collecting = collectingRedactor(["fixed-secret"], () => now);
  collecting.add("early-token");
  expect(collecting.redact("early-token")).toBe(REDACTED);
  // Audit data off for long: nothing redacted meanwhile, values come and go.
  now = COLLECTED_IN_FLIGHT_MS;
  for (let i = 0; i < 2 * COLLECTED_HARD_COUNT + 10; i++) collecting.add(`later-${i}`);
  expect(collecting.redact(`fixed-secret later-${2 * COLLECTED_HARD_COUNT + 9}`)).toBe(`${REDACTED} ${REDACTED}`);
  // Pushed out by the hard cap while untracked: no longer redacted.
  expect(collecting.redact("early-token later-0")).toBe("early-token later-0");
});
