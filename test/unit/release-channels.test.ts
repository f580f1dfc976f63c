/**
 * Which channel a release moves: GitHub's "Latest" (scripts/github-latest.ts: what
 * releases/latest/download serves) and npm's `next` after a stable release (scripts/publish-npm.ts).
 */
import { expect, test } from "bun:test";
import { makesLatest } from "../../scripts/github-latest.ts";
import { distTagFor, nextAfter } from "../../scripts/publish-npm.ts";
import { precedes } from "../../scripts/lib/versions.ts";

test("a stable release with no newer stable tag is Latest", () => {
  expect(makesLatest("0.2.1", ["v0.1.0", "v0.2.0"])).toBe(true);
  expect(makesLatest("0.1.0", [])).toBe(true);
  expect(makesLatest("0.2.0", ["v0.2.0", "v0.1.9"])).toBe(true);
  expect(makesLatest("1.10.0", ["v1.9.0"])).toBe(true);
  // A newer pre-release is not a release users are on.
  expect(makesLatest("0.2.1", ["v0.2.0", "v0.3.0-rc.1"])).toBe(true);
});

test("a fix for an older line, or a pre-release, is not Latest", () => {
  expect(makesLatest("0.1.3", ["v0.1.2", "v0.2.0"])).toBe(false);
  expect(makesLatest("1.9.1", ["v1.10.0"])).toBe(false);
  expect(makesLatest("0.3.0-rc.1", ["v0.2.0"])).toBe(false);
  expect(makesLatest("0.3.0-rc.1", [])).toBe(false);
});

test("versions order as semver does, pre-releases before their release", () => {
  const ordered = [
    "0.9.9",
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.0.1",
    "1.10.0",
  ];
  for (let i = 0; i < ordered.length; i++) {
    for (let j = 0; j < ordered.length; j++) {
      expect([ordered[i], ordered[j], precedes(ordered[i] as string, ordered[j] as string)]).toEqual([
        ordered[i],
        ordered[j],
        i < j,
      ]);
    }
  }
});

test("next moves to latest when it is older than latest, and stays when it is ahead", () => {
  // The rc a stable release came from.
  expect(nextAfter({ latest: "1.2.0", next: "1.2.0-rc.3" }, "1.2.0")).toBe("1.2.0");
  // An rc of an older line, or an older stable version.
  expect(nextAfter({ latest: "1.2.0", next: "1.1.0-rc.1" }, "1.2.0")).toBe("1.2.0");
  expect(nextAfter({ latest: "1.2.0", next: "1.1.0" }, "1.2.0")).toBe("1.2.0");
  // An rc of the coming version is what next is for.
  expect(nextAfter({ latest: "1.2.0", next: "1.3.0-rc.1" }, "1.2.0")).toBeUndefined();
  expect(nextAfter({ latest: "1.2.0", next: "1.2.0" }, "1.2.0")).toBeUndefined();
  expect(nextAfter({ latest: "1.2.0" }, "1.2.0")).toBeUndefined();
});

test("a pre-release goes to next unless latest or next is newer; a stable one to latest unless latest is newer", () => {
  // What next is for: an rc of the coming version, a later rc, a re-run, a first publish.
  expect(distTagFor("1.3.0-rc.1", { latest: "1.2.0", next: "1.2.0" })).toBe("next");
  expect(distTagFor("1.3.0-rc.2", { latest: "1.2.0", next: "1.3.0-rc.1" })).toBe("next");
  expect(distTagFor("1.3.0-rc.1", { latest: "1.2.0", next: "1.3.0-rc.1" })).toBe("next");
  expect(distTagFor("0.1.0-rc.1", {})).toBe("next");
  // next would go behind latest (an rc of an older line, or of a version already released) or back.
  expect(distTagFor("1.1.3-rc.1", { latest: "1.2.0", next: "1.2.0" })).toBe("next-1.1");
  expect(distTagFor("1.2.0-rc.2", { latest: "1.2.0" })).toBe("next-1.2");
  expect(distTagFor("1.2.1-rc.1", { latest: "1.2.0", next: "1.3.0-rc.1" })).toBe("next-1.2");
  // Stable: latest (undefined: npm's default), or latest-MAJOR.MINOR for an older line; next is not asked.
  expect(distTagFor("1.2.1", { latest: "1.2.0", next: "1.3.0-rc.1" })).toBeUndefined();
  expect(distTagFor("1.2.0", { latest: "1.2.0" })).toBeUndefined();
  expect(distTagFor("1.1.3", { latest: "1.2.0" })).toBe("latest-1.1");
});
