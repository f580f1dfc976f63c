/** The one "did you mean" helper: its distance, its thresholds, and how it phrases a suggestion. */
import { describe, expect, test } from "bun:test";
import { closeMatches, didYouMean, editDistance } from "../../src/close-matches.ts";

describe("editDistance", () => {
  test("counts the swap of two neighbours as one edit", () => {
    expect(editDistance("lsit", "list")).toBe(1);
    expect(editDistance("proxy-prot", "proxy-port")).toBe(1);
    expect(editDistance("kitten", "sitting")).toBe(3);
  });

  test("stops at max and says so with max + 1", () => {
    expect(editDistance("kitten", "sitting", 1)).toBe(2);
    expect(editDistance("a", "abcdef", 2)).toBe(3);
  });
});

describe("closeMatches", () => {
  const commands = ["run", "proxy", "list", "stop", "start", "restart", "rm", "logs", "registry"];

  test("allows a third of the typed length in edits, at least one", () => {
    expect(closeMatches("lsit", commands)).toEqual(["list"]);
    expect(closeMatches("regsitry", commands)).toEqual(["registry"]);
    // Two edits are too many for a word of four letters.
    expect(closeMatches("stpo", ["stop"])).toEqual(["stop"]);
    expect(closeMatches("spot", ["stop"])).toEqual([]);
  });

  test("finds nothing when nothing is close", () => {
    expect(closeMatches("xyzzy", commands)).toEqual([]);
    expect(closeMatches("ls", commands)).toEqual([]);
  });

  test("nearestOnly keeps the best distance only; ties come in code-point order", () => {
    expect(closeMatches("stat", commands, { nearestOnly: true })).toEqual(["start"]);
    expect(closeMatches("rn", commands, { nearestOnly: true })).toEqual(["rm", "run"]);
  });

  test("ignores case, and substrings count when asked", () => {
    expect(closeMatches("LIST", ["list"])).toEqual(["list"]);
    expect(closeMatches("context", ["context7-remote"])).toEqual([]);
    expect(closeMatches("context", ["context7-remote"], { substrings: true })).toEqual(["context7-remote"]);
  });

  test("limit caps the list", () => {
    expect(closeMatches("a", ["b", "c", "d"], { limit: 2 })).toEqual(["b", "c"]);
  });
});

test("didYouMean phrases one or several suggestions, or none", () => {
  expect(didYouMean(["--proxy-port"])).toBe("did you mean --proxy-port?");
  expect(didYouMean(["'mcpmgr rm'", "'mcpmgr run'"])).toBe("did you mean 'mcpmgr rm' or 'mcpmgr run'?");
  expect(didYouMean(["a", "b", "c"])).toBe("did you mean a, b or c?");
  expect(didYouMean([])).toBeUndefined();
});
