import { describe, expect, test } from "bun:test";
import { assignNames } from "../../src/gateway/names.ts";

const entries = (...pairs: [string, string][]) => pairs.map(([workload, name]) => ({ workload, name }));
const names = (assignment: ReturnType<typeof assignNames>) =>
  Object.fromEntries(
    [...assignment.byGatewayName].map(([gateway, owned]) => [gateway, `${owned.workload}/${owned.name}`]),
  );

describe("gateway names", () => {
  test("always: every name is <workload>_<name>, and workload names (no _) keep them apart", () => {
    const assignment = assignNames(entries(["a", "b_c"], ["a-b", "c"], ["a", "x"]), "always");
    expect(names(assignment)).toEqual({ a_b_c: "a/b_c", "a-b_c": "a-b/c", a_x: "a/x" });
    expect(assignment.collisions).toEqual([]);
  });

  test("when-needed: a name only one workload has stays bare; a shared one is prefixed for all, and reported", () => {
    const assignment = assignNames(entries(["a", "x"], ["b", "x"], ["a", "only"]), "when-needed");
    expect(names(assignment)).toEqual({ a_x: "a/x", b_x: "b/x", only: "a/only" });
    expect(assignment.collisions).toEqual(['"x" is offered by a, b: named "a_x", "b_x"']);
  });

  test("when-needed: a prefixed name that meets another workload's bare name prefixes that one too", () => {
    const assignment = assignNames(entries(["a", "x"], ["b", "x"], ["c", "a_x"]), "when-needed");
    expect(names(assignment)).toEqual({ a_x: "a/x", b_x: "b/x", c_a_x: "c/a_x" });
  });

  test("the outcome does not depend on the order workloads joined, and a name listed twice is kept once", () => {
    const forward = assignNames(entries(["a", "x"], ["b", "x"], ["b", "x"], ["c", "y"]), "when-needed");
    const backward = assignNames(entries(["c", "y"], ["b", "x"], ["a", "x"]), "when-needed");
    expect(names(forward)).toEqual(names(backward));
  });
});
