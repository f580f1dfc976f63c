/**
 * JSON values as Cedar context values, exactly or not at all (docs/policies.md, "From JSON
 * to Cedar"). A value Cedar cannot hold exactly must not be dropped or rounded: a policy
 * reading it would err, Cedar skips a policy that errs, and a forbid would be walked around.
 *   string                      String (one with a lone surrogate has no Cedar value)
 *   true / false                Bool
 *   integer within ±(2^63-1)    Long, with the digits the client sent (2^53 and beyond too)
 *   other number                decimal("…") when it has at most 4 decimal places and lies
 *                               within decimal's range (±922337203685477.5807); 1.0 is Long 1
 *   array                       Set (order and duplicates are not kept)
 *   object                      Record (keys __entity, __extn and __expr are refused: Cedar
 *                               would read them as an entity or extension value)
 *   null                        none: Cedar has no null
 * Numbers are mapped from their shortest decimal form, the form the body is forwarded in
 * (rpc-body.ts serialises what the policies checked), so Cedar and the server see one value.
 */

/** A value Cedar holds: the JSON form cedar-wasm reads (a raw JSON integer keeps its digits). */
export type CedarValue = string | number | boolean | object;

export class Unmappable {
  readonly why: string;
  constructor(why: string) {
    this.why = why;
  }
}

const jsonWithRaw = JSON as typeof JSON & { isRawJSON?(value: unknown): boolean; rawJSON(text: string): object };

const maxLong = (1n << 63n) - 1n;
const minLong = -(1n << 63n);
/** Records nested deeper than this are not mapped (real arguments are far shallower). */
const maxDepth = 32;
/** Keys cedar-wasm's JSON format reads as escapes rather than as a record's attributes. */
const escapes = new Set(["__entity", "__extn", "__expr"]);

function long(digits: string): CedarValue | Unmappable {
  const n = BigInt(digits);
  return n >= minLong && n <= maxLong
    ? jsonWithRaw.rawJSON(digits)
    : new Unmappable(`${digits} is beyond the range of Cedar's Long`);
}

function number(value: number): CedarValue | Unmappable {
  if (Number.isSafeInteger(value)) return value;
  const text = String(value);
  if (!Number.isFinite(value) || /e/i.test(text)) return new Unmappable(`${text} has no exact Cedar value`);
  if (Number.isInteger(value)) return long(text);
  const [whole = "", fraction = ""] = text.split(".");
  if (fraction.length > 4) return new Unmappable(`${text} has more than the 4 decimal places Cedar's decimal holds`);
  const scaled = BigInt(whole + fraction.padEnd(4, "0"));
  if (scaled < minLong || scaled > maxLong) return new Unmappable(`${text} is beyond the range of Cedar's decimal`);
  return { __extn: { fn: "decimal", arg: text } };
}

/** The Cedar value of a JSON value, or why there is none. */
export function cedarValueOf(value: unknown, depth = 0): CedarValue | Unmappable {
  switch (typeof value) {
    case "string":
      return value.isWellFormed() ? value : new Unmappable("a string with a lone surrogate has no Cedar value");
    case "boolean":
      return value;
    case "number":
      return number(value);
  }
  if (value === null) return new Unmappable("null has no Cedar value");
  if (typeof value !== "object") return new Unmappable(`a ${typeof value} has no Cedar value`);
  if (jsonWithRaw.isRawJSON?.(value)) return long(JSON.stringify(value));
  if (depth >= maxDepth) return new Unmappable(`values nested deeper than ${maxDepth} levels are not mapped`);
  if (Array.isArray(value)) {
    const set: CedarValue[] = [];
    for (const item of value) {
      const mapped = cedarValueOf(item, depth + 1);
      if (mapped instanceof Unmappable) return mapped;
      set.push(mapped);
    }
    return set;
  }
  // No prototype: a "__proto__" key is an attribute like any other.
  const record: Record<string, CedarValue> = Object.create(null);
  for (const [key, item] of Object.entries(value)) {
    if (escapes.has(key)) return new Unmappable(`the key ${key} would be read by Cedar as an escape, not an attribute`);
    if (!key.isWellFormed()) return new Unmappable("a key with a lone surrogate has no Cedar value");
    const mapped = cedarValueOf(item, depth + 1);
    if (mapped instanceof Unmappable) return mapped;
    record[key] = mapped;
  }
  return record;
}
