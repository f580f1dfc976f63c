/**
 * Keeping secret values out of output (ARCHITECTURE.md §3.8). `Secret` wraps a value so that
 * every accidental way of printing it (template strings, String(), JSON.stringify,
 * console.log / Bun.inspect / util.inspect, spreading, structuredClone) shows
 * `[secret]`; the value comes out only through `reveal()`, which is easy to grep for.
 * `redact()` scrubs known values from text that is about to be logged, in every spelling of them
 * (spellings.ts), found in one pass over the text however many values there are (spelling-matcher.ts).
 */
import { inspect } from "node:util";
import type { SpellingMatcher } from "./spelling-matcher.ts";
import { spellingsOf } from "./spellings.ts";

export { MIN_REDACT_LENGTH } from "./spellings.ts";
export const REDACTED = "***";

const SHOWN = "[secret]";

export class Secret {
  // A private field: not enumerable, not reflected, not cloned, not shown by inspect.
  readonly #value: string;

  constructor(value: string) {
    if (typeof value !== "string") throw new TypeError("a Secret holds a string");
    this.#value = value;
  }

  static from(value: string | Secret): Secret {
    return value instanceof Secret ? value : new Secret(value);
  }

  /** The plain value. Only where it must leave the process: a child's environment, a header, stdout of `secret get`. */
  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return SHOWN;
  }

  toJSON(): string {
    return SHOWN;
  }

  [Symbol.toPrimitive](): string {
    return SHOWN;
  }

  // Bun.inspect.custom is the same registered symbol today; the check below the class covers it if it ever is not.
  [inspect.custom](): string {
    return SHOWN;
  }

  get [Symbol.toStringTag](): string {
    return "Secret";
  }
}

if (typeof Bun !== "undefined" && (Bun.inspect.custom as symbol) !== inspect.custom) {
  Object.defineProperty(Secret.prototype, Bun.inspect.custom, { value: () => SHOWN, enumerable: false });
}

/**
 * Replaces every known secret value of at least MIN_REDACT_LENGTH characters in `text` with `***`, in each
 * spelling it can have in a log or an audit line (spellings.ts).
 */
export function redact(text: string, values: Iterable<string | Secret>): string {
  return redactor(values)(text);
}

/** A redact() bound to a fixed set of values, for loggers (their spellings worked out once). */
export function redactor(values: Iterable<string | Secret>): (text: string) => string {
  const kept = new KeptValues();
  for (const value of values) kept.keep(plain(value));
  return (text) => kept.redact(text);
}

function plain(value: string | Secret): string {
  return value instanceof Secret ? value.reveal() : value;
}

/**
 * The values redacted and their spellings in the matcher; a value's spellings are worked out when it
 * comes, and taken out when it goes, so a change costs that value's, not every value's.
 */
class KeptValues {
  /**
   * Made with the first spelling: a workload that holds no secret never needs it, and a supervisor keeps
   * what it loaded for as long as it runs (required, not imported: keep() is synchronous).
   */
  #matcher: SpellingMatcher | undefined;
  readonly #spellings = new Map<string, string[]>();

  has(value: string): boolean {
    return this.#spellings.has(value);
  }

  keep(value: string): void {
    if (typeof value !== "string" || this.#spellings.has(value)) return;
    const spellings = spellingsOf(value);
    this.#spellings.set(value, spellings);
    if (spellings.length === 0) return;
    this.#matcher ??= new (
      require("./spelling-matcher.ts") as typeof import("./spelling-matcher.ts")
    ).SpellingMatcher();
    for (const spelling of spellings) this.#matcher.add(spelling);
  }

  drop(value: string): void {
    const spellings = this.#spellings.get(value);
    if (spellings === undefined) return;
    this.#spellings.delete(value);
    for (const spelling of spellings) this.#matcher?.delete(spelling);
  }

  values(): IterableIterator<string> {
    return this.#spellings.keys();
  }

  redact(text: string): string {
    return this.#matcher === undefined ? text : this.#matcher.replace(text, REDACTED);
  }
}

/** How long a value learned while running stays redacted once another replaced it. */
export const RETIRED_KEEP_MS = 60 * 60_000;
/** How many replaced values are kept at most (each one more spelling to look for in every line). */
export const RETIRED_KEEP_COUNT = 8;

/** A redactor that also learns values while it runs (an OAuth token renewed: oauth-token-source.ts). */
export interface LearningRedactor {
  readonly redact: (text: string) => string;
  /**
   * The values in use now, in place of the last ones learned; those stay redacted for RETIRED_KEEP_MS
   * (an answer or a remote's log may still quote the token it was called with). Cheap when unchanged:
   * called at every request.
   */
  readonly learn: (values: readonly string[]) => void;
}

export function learningRedactor(fixed: Iterable<string | Secret>, now: () => number = Date.now): LearningRedactor {
  const always = new Set([...fixed].map(plain));
  let current: readonly string[] = [];
  /** Values replaced, oldest first, with when. */
  let retired: { value: string; at: number }[] = [];
  const kept = new KeptValues();
  for (const value of always) kept.keep(value);
  return {
    redact: (text) => kept.redact(text),
    learn(values) {
      if (values.length === current.length && values.every((value, i) => value === current[i])) return;
      const at = now();
      retired.push(...current.filter((value) => !values.includes(value)).map((value) => ({ value, at })));
      retired = retired
        .filter((old) => at - old.at < RETIRED_KEEP_MS && !values.includes(old.value))
        .slice(-RETIRED_KEEP_COUNT);
      current = [...values];
      const wanted = new Set([...always, ...current, ...retired.map((old) => old.value)]);
      for (const value of [...kept.values()]) if (!wanted.has(value)) kept.drop(value);
      for (const value of wanted) kept.keep(value);
    },
  };
}

/**
 * How many values learned one by one are kept once they are no longer in flight (token exchange: one
 * per client; each is a few more spellings to look for in every audit data field).
 */
export const COLLECTED_KEEP_COUNT = 256;
/**
 * A value used this recently is kept past COLLECTED_KEEP_COUNT: the answer to the request it was sent
 * with may still be on its way, and a flood of new clients must not clear it from that answer's record.
 */
export const COLLECTED_IN_FLIGHT_MS = 10 * 60_000;
/** The most values kept even so (memory, and the cost of each audit record, under a flood of clients). */
export const COLLECTED_HARD_COUNT = 4096;

/** A redactor that learns values one by one, many in use at once (token exchange: a token per client). */
export interface CollectingRedactor {
  readonly redact: (text: string) => string;
  /**
   * A value in use now: redacted from then on, until RETIRED_KEEP_MS after its last use, or, once it
   * has not been used for COLLECTED_IN_FLIGHT_MS, until COLLECTED_KEEP_COUNT values used since push it
   * out (COLLECTED_HARD_COUNT of them whatever their age). Cheap: called at every request, with audit
   * data off too, so the spellings are worked out by the next redact(), not here.
   */
  readonly add: (value: string) => void;
}

export function collectingRedactor(fixed: Iterable<string | Secret>, now: () => number = Date.now): CollectingRedactor {
  const always = new Set([...fixed].map(plain));
  /** Value → when last used; a Map keeps insertion order, so the least recently used comes first. */
  const used = new Map<string, number>();
  const kept = new KeptValues();
  for (const value of always) kept.keep(value);
  /** Values that came or went since the last redact(); too many (audit data off for long): `kept` is redone whole. */
  let changed: Set<string> | undefined = new Set();
  const change = (value: string) => {
    if (changed === undefined) return;
    changed.add(value);
    if (changed.size > 2 * COLLECTED_HARD_COUNT) changed = undefined;
  };
  const settle = () => {
    const wanted = (value: string) => always.has(value) || used.has(value);
    if (changed === undefined) {
      for (const value of [...kept.values()]) if (!wanted(value)) kept.drop(value);
      for (const value of used.keys()) kept.keep(value);
    } else {
      for (const value of changed) wanted(value) ? kept.keep(value) : kept.drop(value);
    }
    changed = new Set();
  };
  return {
    redact: (text) => {
      if (changed === undefined || changed.size > 0) settle();
      return kept.redact(text);
    },
    add(value) {
      const at = now();
      const known = used.delete(value);
      used.set(value, at);
      if (known) return;
      change(value);
      // Oldest first, so the first one that must stay ends the sweep (all after it are younger).
      for (const [old, when] of used) {
        const age = at - when;
        const expired = age >= RETIRED_KEEP_MS;
        const crowded = used.size > COLLECTED_KEEP_COUNT && age >= COLLECTED_IN_FLIGHT_MS;
        if (!expired && !crowded && used.size <= COLLECTED_HARD_COUNT) break;
        used.delete(old);
        change(old);
      }
    },
  };
}
