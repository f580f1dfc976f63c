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

/** Replaces every known secret value of at least MIN_REDACT_LENGTH characters in `text` with `***`. */
export function redact(text: string, values: Iterable<string | Secret>): string {
  const plain = new Set<string>();
  for (const value of values) {
    const text = value instanceof Secret ? value.reveal() : value;
    if (typeof text === "string" && text.length >= MIN_REDACT_LENGTH) plain.add(text);
  }
  if (plain.size === 0) return text;
  // Longest first, so a value that contains another one is removed whole.
  let out = text;
  for (const value of [...plain].sort((a, b) => b.length - a.length)) {
    if (out.includes(value)) out = out.split(value).join(REDACTED);
  }
  return out;
}

/** A redact() bound to a fixed set of values, for loggers. */
export function redactor(values: Iterable<string | Secret>): (text: string) => string {
  const fixed = [...values];
  return (text) => redact(text, fixed);
}
