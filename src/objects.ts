/**
 * Plain data as every layer handles it: the one test for "a JSON object" (not null, not an
 * array), and the deep freeze that stores, the registry and the run spec hand their values out
 * with, so that one caller cannot change what another sees.
 */

/** A JSON object: an object that is neither null nor an array. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Frozen all the way down through plain objects and arrays; what is not plain data (a URL, an
 * engine's client, a set or a map) is left as it is, since freezing it would not freeze what it holds.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  const proto = Object.getPrototypeOf(value);
  // A record without a prototype (config/named-record.ts) is plain data too.
  if (proto !== Object.prototype && proto !== Array.prototype && proto !== null) return value;
  Object.freeze(value);
  // Own keys only (plain objects and arrays inherit no enumerable ones); no array of values per object
  // and no call per string: `registry list` freezes the whole catalog before it starts (bench `cli-startup`).
  for (const key in value) {
    const child = value[key];
    if (typeof child === "object" && child !== null) deepFreeze(child);
  }
  return value;
}
