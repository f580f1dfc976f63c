/**
 * Redaction against a plain reference (every place of every spelling found with indexOf, overlapping places
 * hidden as one), on sets built to trouble a matcher keyed by four characters (spelling-matcher.ts): spellings
 * that are prefixes, suffixes and substrings of each other, runs of one character, spellings no longer than
 * the key, characters that share their low byte (the key keeps only that), halves of surrogate pairs, JSON and
 * percent escapes, and set sizes on both sides of the switch from indexOf to the scan. Seeded: the same cases
 * at every run.
 */
import { expect, test } from "bun:test";
import { RETIRED_KEEP_MS, REDACTED, collectingRedactor, learningRedactor, redactor } from "../../src/secrets/redact.ts";
import { SpellingMatcher } from "../../src/secrets/spelling-matcher.ts";
import { spellingsOf } from "../../src/secrets/spellings.ts";

function reference(text: string, spellings: Iterable<string>): string {
  const coveredTo = new Array<number>(text.length).fill(-1);
  for (const spelling of spellings) {
    if (spelling.length < 4) continue;
    for (let at = text.indexOf(spelling); at !== -1; at = text.indexOf(spelling, at + 1)) {
      for (let i = at; i < at + spelling.length; i++)
        coveredTo[i] = Math.max(coveredTo[i] as number, at + spelling.length);
    }
  }
  let out = "";
  for (let i = 0; i < text.length; ) {
    if (coveredTo[i] === -1) {
      out += text[i];
      i++;
      continue;
    }
    let end = coveredTo[i] as number;
    for (let j = i; j < end; j++) end = Math.max(end, coveredTo[j] as number);
    out += REDACTED;
    i = end;
  }
  return out;
}

/** xorshift32: a fixed sequence from a seed. */
function seeded(seed: number) {
  let state = seed >>> 0 || 1;
  const next = () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 2 ** 32;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  /** Code units, not characters: a word may start or end inside a surrogate pair. */
  const word = (alphabet: string, length: number) => {
    let out = "";
    while (out.length < length) out += pick([...alphabet]);
    return out.slice(0, length);
  };
  return { next, pick, word };
}

// `a`, `š` (U+0161) and `ᅡ` (U+1161) share their low byte, as do U+0000 and U+0100; emoji share a high surrogate.
const ALPHABETS = ["a", "ab", "aš\u1161", "😀🙀a", 'abcdé\\"%<&\n', "xy\u0000\u0100\u2028", "0123456789abcdef"];

function spellingSet(random: ReturnType<typeof seeded>, alphabet: string, count: number): string[] {
  const out: string[] = [];
  while (out.length < count) {
    const roll = random.next();
    const other = out.length > 0 ? random.pick(out) : undefined;
    if (other !== undefined && other.length > 4 && roll < 0.3) {
      const length = 4 + Math.floor(random.next() * (other.length - 4));
      const from = [0, other.length - length, Math.floor(random.next() * (other.length - length + 1))];
      out.push(other.slice(random.pick(from)).slice(0, length));
    } else if (other !== undefined && roll < 0.5) {
      const more = random.word(alphabet, 1 + Math.floor(random.next() * 4));
      out.push(roll < 0.4 ? other + more : more + other);
    } else out.push(random.word(alphabet, 4 + Math.floor(random.next() * (random.next() < 0.5 ? 2 : 20))));
  }
  return out;
}

function textOf(random: ReturnType<typeof seeded>, alphabet: string, spellings: readonly string[], length: number) {
  let text = "";
  while (text.length < length) {
    const roll = random.next();
    const spelling = spellings.length > 0 ? random.pick(spellings) : "";
    if (roll < 0.35) text += spelling;
    else if (roll < 0.45) text += spelling.slice(0, Math.floor(random.next() * spelling.length));
    else text += random.word(alphabet, 1 + Math.floor(random.next() * 5));
  }
  return text;
}

test("the matcher finds what indexOf finds while spellings come and go, on either side of the switch to the scan", () => {
  const random = seeded(82);
  let compared = 0;
  for (let round = 0; round < 120; round++) {
    const alphabet = random.pick(ALPHABETS);
    const spellings = spellingSet(random, alphabet, random.pick([1, 3, 8, 23, 24, 25, 26, 60, 200]));
    const matcher = new SpellingMatcher();
    const live = new Map<string, number>();
    for (let step = 0; step < spellings.length * 2; step++) {
      const spelling = random.pick(spellings);
      const count = live.get(spelling) ?? 0;
      if (random.next() < 0.65) {
        matcher.add(spelling);
        live.set(spelling, count + 1);
      } else {
        matcher.delete(spelling);
        if (count > 1) live.set(spelling, count - 1);
        else live.delete(spelling);
      }
      if (random.next() < 0.1) {
        const text = textOf(random, alphabet, spellings, 40 + Math.floor(random.next() * 200));
        expect({ spellings: [...live.keys()], text, out: matcher.replace(text, REDACTED) }).toEqual({
          spellings: [...live.keys()],
          text,
          out: reference(text, live.keys()),
        });
        compared++;
      }
    }
  }
  expect(compared).toBeGreaterThan(700);
});

test("a redactor leaves no spelling of any value, and hides nothing else", () => {
  const random = seeded(83);
  for (let round = 0; round < 100; round++) {
    const alphabet = random.pick(['aé"\\', "x\n y", "😀a%&", "abc<>&\u2028", "aš\u1161b"]);
    // Values from surrogate-splitting words too: a lone surrogate must not stop a value being redacted.
    const values = spellingSet(random, alphabet, random.pick([1, 3, 10, 30]));
    const spellings = new Set(values.flatMap(spellingsOf));
    const scrub = redactor(values);
    for (let i = 0; i < 4; i++) {
      const text = textOf(random, `${alphabet}{}:,`, [...spellings], 200);
      const out = scrub(text);
      expect({ values, text, out }).toEqual({ values, text, out: reference(text, spellings) });
    }
  }
});

test("a collecting redactor hides exactly the values it keeps (an hour after their last use), as its set changes between records", () => {
  const random = seeded(84);
  for (let round = 0; round < 15; round++) {
    const alphabet = random.pick(ALPHABETS);
    const pool = spellingSet(random, alphabet, 40).filter((value) => value.length >= 4);
    const fixed = pool.slice(0, 2);
    let now = 0;
    const collecting = collectingRedactor(fixed, () => now);
    /** Value → last use; values unused for an hour go when a new value comes (fewer than 256: none crowded out). */
    const lastUse = new Map<string, number>();
    for (let step = 0; step < 60; step++) {
      now += Math.floor(random.next() * 8 * 60_000);
      const value = random.pick(pool);
      collecting.add(value);
      if (!lastUse.has(value)) for (const [old, at] of lastUse) if (now - at >= RETIRED_KEEP_MS) lastUse.delete(old);
      lastUse.set(value, now);
      if (random.next() < 0.4) {
        const wanted = [...fixed, ...lastUse.keys()];
        const text = textOf(random, alphabet, pool, 150);
        expect({ wanted, text, out: collecting.redact(text) }).toEqual({ wanted, text, out: redactor(wanted)(text) });
      }
    }
  }
});

test("a learning redactor hides its fixed values and the ones in use, whatever came before", () => {
  const random = seeded(85);
  for (let round = 0; round < 15; round++) {
    const alphabet = random.pick(ALPHABETS);
    const pool = spellingSet(random, alphabet, 30).filter((value) => value.length >= 4);
    let now = 0;
    const learning = learningRedactor(pool.slice(0, 1), () => now);
    for (let step = 0; step < 40; step++) {
      now += Math.floor(random.next() * 20 * 60_000);
      const current = random.next() < 0.5 ? [random.pick(pool)] : [random.pick(pool), random.pick(pool)];
      learning.learn(current);
      const text = textOf(random, alphabet, pool, 100);
      const out = learning.redact(text);
      for (const spelling of [...pool.slice(0, 1), ...current].flatMap(spellingsOf))
        expect(out).not.toContain(spelling);
    }
  }
});

test("a value with a lone surrogate (a token from a JSON answer may hold one) is redacted, its percent-encoding too", () => {
  const token = "tok\ud83den-with-half-a-pair";
  const scrub = redactor([token]);
  expect(scrub(`a ${token} b`)).toBe(`a ${REDACTED} b`);
  expect(scrub(`?t=${encodeURIComponent(token.toWellFormed())}`)).toBe(`?t=${REDACTED}`);
  const collecting = collectingRedactor([]);
  collecting.add(token);
  collecting.add("a-second-token");
  expect(collecting.redact(`${token} a-second-token`)).toBe(`${REDACTED} ${REDACTED}`);
});
