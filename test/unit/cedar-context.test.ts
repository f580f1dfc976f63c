/**
 * JSON values as Cedar context values, exactly or not at all (docs/policies.md, "From JSON to
 * Cedar"), and which context attributes the policies read.
 */
import { expect, test } from "bun:test";
import { cedarValueOf, Unmappable } from "../../src/middleware/cedar-context.ts";
import { policyFacts } from "../../src/middleware/cedar-policies.ts";
import { rpcBodyOf } from "../../src/middleware/rpc-body.ts";

/** The value as cedar-wasm receives it (JSON text), or "unmappable: why". */
function mapped(json: string): string {
  // Parsed as the policies parse bodies: integers beyond 2^53 keep their digits.
  const value = (rpcBodyOf(`{"v":${json}}`).value as { v: unknown }).v;
  const out = cedarValueOf(value);
  return out instanceof Unmappable ? `unmappable: ${out.why}` : JSON.stringify(out);
}

test("strings, booleans, safe integers, sets and records map as they are", () => {
  expect(mapped('"a"')).toBe('"a"');
  expect(mapped("true")).toBe("true");
  expect(mapped("-42")).toBe("-42");
  expect(mapped("1.0")).toBe("1");
  expect(mapped('[1,"a",[true]]')).toBe('[1,"a",[true]]');
  expect(mapped('{"a":{"b":1},"__proto__":2}')).toBe('{"a":{"b":1},"__proto__":2}');
});

test("integers beyond 2^53 are Longs with the digits the client sent, within Long's range", () => {
  expect(mapped("9007199254740993")).toBe("9007199254740993");
  expect(mapped("-9223372036854775808")).toBe("-9223372036854775808");
  expect(mapped("9223372036854775808")).toStartWith(
    "unmappable: 9223372036854775808 is beyond the range of Cedar's Long",
  );
  expect(mapped("1e16")).toBe("10000000000000000");
});

test("other numbers are decimals when decimal holds them exactly", () => {
  expect(mapped("1000.5")).toBe('{"__extn":{"fn":"decimal","arg":"1000.5"}}');
  expect(mapped("-0.0001")).toBe('{"__extn":{"fn":"decimal","arg":"-0.0001"}}');
  expect(mapped("922337203685477.5")).toBe('{"__extn":{"fn":"decimal","arg":"922337203685477.5"}}');
  expect(mapped("1.23456")).toBe("unmappable: 1.23456 has more than the 4 decimal places Cedar's decimal holds");
  expect(mapped("1e-7")).toBe("unmappable: 1e-7 has no exact Cedar value");
  expect(mapped("1e300")).toBe("unmappable: 1e+300 has no exact Cedar value");
  expect(mapped("922337203685478.5")).toBe("unmappable: 922337203685478.5 is beyond the range of Cedar's decimal");
});

test("null, lone surrogates, Cedar's escapes and deep nesting have no Cedar value", () => {
  expect(mapped("null")).toBe("unmappable: null has no Cedar value");
  expect(mapped("[1,null]")).toBe("unmappable: null has no Cedar value");
  expect(mapped('"\\ud800"')).toBe("unmappable: a string with a lone surrogate has no Cedar value");
  expect(mapped('{"__entity":{"type":"Client","id":"admin"}}')).toStartWith("unmappable: the key __entity");
  expect(mapped('{"a":{"__extn":{"fn":"decimal","arg":"1.0"}}}')).toStartWith("unmappable: the key __extn");
  expect(mapped(`${"[".repeat(40)}1${"]".repeat(40)}`)).toStartWith("unmappable: values nested deeper than 32");
});

test("the attributes policies read, at the top and below; the whole context; forbid policies by id", () => {
  const facts = policyFacts(
    [
      "permit(principal, action, resource) when { context has arg_t.limit && context.arg_t.limit > 1 };",
      '@id("no-big-transfers") forbid(principal, action, resource) when { context["arg_amount"] > 100 };',
      'forbid(principal, action, resource) unless { decimal("1.0").lessThan(context.arg_rate) && context.claim_team == "x" };',
    ].join("\n"),
  );
  expect([...facts.reads.attributes].sort()).toEqual(["arg_amount", "arg_rate", "arg_t", "claim_team"]);
  expect([...facts.reads.nested]).toEqual(["limit"]);
  expect(facts.reads.whole).toBe(false);
  expect(Object.keys(facts.byId)).toEqual(["policy0", "no-big-transfers", "policy2"]);
  expect([...facts.forbids]).toEqual(["no-big-transfers", "policy2"]);
  expect(policyFacts("forbid(principal, action, resource) when { context == {} };").reads.whole).toBe(true);
});
