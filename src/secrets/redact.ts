/**
 * Keeping secret values out of output (ARCHITECTURE.md §3.8). `Secret` wraps a value so that
 * every accidental way of printing it (template strings, String(), JSON.stringify,
 * console.log / Bun.inspect / util.inspect, spreading, structuredClone) shows
 * `[secret]`; the value comes out only through `reveal()`, which is easy to grep for.
 * `redact()` scrubs known values from text that is about to be logged.
 */
import { inspect } from "node:util";

export const REDACTED = "***";
/** Shorter values would turn ordinary words and numbers in logs into `***`. */
export const MIN_REDACT_LENGTH = 4;

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
 * spelling it can have in a log or an audit line (see spellings()).
 */
export function redact(text: string, values: Iterable<string | Secret>): string {
  return redactSpellings(text, spellings(values));
}

/** A redact() bound to a fixed set of values, for loggers (their spellings worked out once). */
export function redactor(values: Iterable<string | Secret>): (text: string) => string {
  const fixed = spellings(values);
  return (text) => redactSpellings(text, fixed);
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
  const always = [...fixed];
  let current: readonly string[] = [];
  /** Values replaced, oldest first, with when. */
  let retired: { value: string; at: number }[] = [];
  let spelled = spellings(always);
  return {
    redact: (text) => redactSpellings(text, spelled),
    learn(values) {
      if (values.length === current.length && values.every((value, i) => value === current[i])) return;
      const at = now();
      retired.push(...current.filter((value) => !values.includes(value)).map((value) => ({ value, at })));
      retired = retired
        .filter((old) => at - old.at < RETIRED_KEEP_MS && !values.includes(old.value))
        .slice(-RETIRED_KEEP_COUNT);
      current = [...values];
      spelled = spellings([...always, ...current, ...retired.map((old) => old.value)]);
    },
  };
}

/**
 * How many values learned one by one are kept once they are no longer in flight (token exchange: one
 * per client; each is one more `includes` for every audit data field).
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
  const always = [...fixed];
  /** Value → when last used; a Map keeps insertion order, so the least recently used comes first. */
  const used = new Map<string, number>();
  /** Undefined after a change: worked out again on the next redact() (about 1 ms for 256 tokens). */
  let spelled: string[] | undefined = spellings(always);
  return {
    redact: (text) => {
      spelled ??= spellings([...always, ...used.keys()]);
      return redactSpellings(text, spelled);
    },
    add(value) {
      const at = now();
      const known = used.delete(value);
      used.set(value, at);
      if (known) return;
      // Oldest first, so the first one that must stay ends the sweep (all after it are younger).
      for (const [old, when] of used) {
        const age = at - when;
        const expired = age >= RETIRED_KEEP_MS;
        const crowded = used.size > COLLECTED_KEEP_COUNT && age >= COLLECTED_IN_FLIGHT_MS;
        if (!expired && !crowded && used.size <= COLLECTED_HARD_COUNT) break;
        used.delete(old);
      }
      spelled = undefined;
    },
  };
}

function redactSpellings(text: string, fixed: readonly string[]): string {
  let out = text;
  for (const value of fixed) {
    if (out.includes(value)) out = out.split(value).join(REDACTED);
  }
  return out;
}

/** How deep a value may sit in JSON inside JSON: a tool's JSON text in an audit line is two. */
const JSON_DEPTH = 2;

/**
 * Every spelling of the values to look for, longest first (so a value that contains another one is
 * removed whole). Besides the value itself: its percent-encoded form, its JSON string forms (a value with a quote, a backslash or a
 * line break is written escaped by a server that logs its settings as JSON, and escaped again in an audit
 * line's data; Python's json also escapes every non-ASCII character, Go's `<`, `>` and `&`), and each line of a multi-line value
 * (a PEM key, a credentials file), which a server may print one write at a time, so that no chunk of its
 * output holds the whole value.
 */
function spellings(values: Iterable<string | Secret>): string[] {
  const found = new Set<string>();
  const add = (text: string) => {
    let level = [text];
    for (let depth = 0; depth <= JSON_DEPTH; depth++) {
      const escaped = new Set<string>();
      for (const spelling of level) {
        if (spelling.length < MIN_REDACT_LENGTH) continue;
        found.add(spelling);
        escaped.add(JSON.stringify(spelling).slice(1, -1));
      }
      // JSON writers differ beyond JavaScript's: Python's escapes non-ASCII, Go's `<`, `>` and `&`.
      level = [...new Set([...escaped].flatMap((spelling) => [spelling, asciiOnly(spelling), htmlSafe(spelling)]))];
    }
  };
  // A line is looked for without its indentation, and only when it has a letter or a digit: a credentials
  // file's "    }," or an indented blank line is in every pretty-printed JSON and indented text.
  const addLine = (line: string) => {
    if (/[\p{L}\p{N}]/u.test(line)) add(line);
  };
  for (const value of values) {
    const text = value instanceof Secret ? value.reveal() : value;
    if (typeof text !== "string" || text.length < MIN_REDACT_LENGTH) continue;
    add(text);
    // Percent-encoded, as a URL or a form quotes it (a base64 key's `+`, `/` and `=`, a password's `@`).
    if (encodeURIComponent(text) !== text) add(encodeURIComponent(text));
    if (/[\r\n]/.test(text)) for (const line of text.split(/\r?\n|\r/)) addLine(line.trim());
  }
  return [...found].sort((a, b) => b.length - a.length);
}

/** JSON text with `<`, `>` and `&` written as `\u003c`, `\u003e`, `\u0026`, as Go's encoding/json writes them by default. */
function htmlSafe(text: string): string {
  return text.replace(/[<>&\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** JSON text with every character beyond ASCII written as `\uXXXX`, as Python's json.dumps writes it by default. */
function asciiOnly(text: string): string {
  return text.replace(/[^\x00-\x7f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
