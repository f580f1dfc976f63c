/**
 * The strict JSON helpers: duplicate keys found wherever they are (JSON.parse hides them),
 * and the fold key that merges what Go's case-insensitive key matching merges (checked
 * against Go's own Unicode tables in test/integration/proxy-canonical-messages.test.ts).
 */
import { expect, test } from "bun:test";
import { duplicateKeyIn, foldKey } from "../../src/middleware/strict-json.ts";

test("duplicate keys are found at any depth, in escaped spellings, and only within one object", () => {
  expect(duplicateKeyIn('{"a":1,"b":2}')).toBeUndefined();
  expect(duplicateKeyIn('{"a":1,"a":2}')).toBe("a");
  expect(duplicateKeyIn('{"a":{"b":1},"c":{"b":2}}')).toBeUndefined();
  expect(duplicateKeyIn('{"a":[{"b":1},{"b":2}]}')).toBeUndefined();
  expect(duplicateKeyIn('[{"x":[1,{"y":1,"y":2}]}]')).toBe("y");
  expect(duplicateKeyIn('{"n\\u0061me":1, "name" :2}')).toBe("name");
  // Strings that look like keys, braces, brackets and escaped quotes inside values.
  expect(duplicateKeyIn('{"a":"\\"a\\":{","b":"}]","c":"x\\\\","d":["a",":"]}')).toBeUndefined();
  expect(duplicateKeyIn('{"a":"\\\\","a":1}')).toBe("a");
  expect(duplicateKeyIn('{ "k" : 1 ,\n\t"k":2 }')).toBe("k");
});

test("fold keys: ASCII case, the long s and the Kelvin sign, and other scripts' cases", () => {
  expect(foldKey("PARAMS")).toBe(foldKey("params"));
  expect(foldKey("paramſ")).toBe(foldKey("params"));
  expect(foldKey("\u212Aey")).toBe(foldKey("key"));
  expect(foldKey("ΣΊΣΥΦΟΣ")).toBe(foldKey("σίσυφος"));
  expect(foldKey("name")).not.toBe(foldKey("names"));
  expect(foldKey("a_b")).not.toBe(foldKey("a-b"));
});
