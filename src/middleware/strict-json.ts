/**
 * What JSON.parse hides and servers read differently. JSON.parse keeps the last of duplicate
 * keys without a word, while servers keep the last (Go's encoding/json, Python), the first
 * (some streaming readers) or refuse the message; and Go's encoding/json matches keys to
 * struct fields case-insensitively, folding Unicode as well ("paramſ" is "params", "K" with
 * the Kelvin sign is "k"). A policy that decided on one reading must not forward a message
 * the server may read another way: these helpers find such messages (message-checks.ts says
 * where they are looked for).
 */

/**
 * A key that Go's case-insensitive matching treats as the same name maps to the same fold
 * key. Go folds with Unicode simple case folding (bytes.EqualFold, unicode.SimpleFold);
 * lower-casing the upper case of the lower case merges every one of its orbits (checked
 * against Go's own tables by test/unit/strict-json.test.ts) and a few more pairs (ı with i,
 * ß with ss): refusing those too errs on the safe side.
 */
export function foldKey(key: string): string {
  for (let i = 0; i < key.length; i++) {
    if (key.charCodeAt(i) > 0x7f) return key.toLowerCase().toUpperCase().toLowerCase();
  }
  return key.toLowerCase();
}

/** Where the string that starts at `start` (its opening quote) ends: the index of its closing quote. */
function stringEnd(text: string, start: number): number {
  let from = start + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote === -1) return text.length;
    let backslashes = 0;
    for (let i = quote - 1; text.charCodeAt(i) === 0x5c; i--) backslashes++;
    if (backslashes % 2 === 0) return quote;
    from = quote + 1;
  }
}

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * The first key that appears twice in one object of `text`, or undefined. `text` must be
 * valid JSON (JSON.parse accepted it): this walks its structure without checking it again.
 * Linear; strings are skipped with indexOf, keys are decoded only when they hold escapes.
 */
export function duplicateKeyIn(text: string): string | undefined {
  // One entry per open object (its keys so far) or array (null).
  const open: (Set<string> | null)[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const end = stringEnd(text, i);
      let next = end + 1;
      while (next < text.length && isWhitespace(text.charCodeAt(next))) next++;
      const keys = open[open.length - 1];
      if (text.charCodeAt(next) === 0x3a && keys) {
        const raw = text.slice(i + 1, end);
        const key = raw.includes("\\") ? (JSON.parse(`"${raw}"`) as string) : raw;
        if (keys.has(key)) return key;
        keys.add(key);
      }
      i = end;
    } else if (c === 0x7b) open.push(new Set());
    else if (c === 0x5b) open.push(null);
    else if (c === 0x7d || c === 0x5d) open.pop();
  }
  return undefined;
}
