/**
 * The Cedar evaluator's pieces that need no process: its frames' line reader, where its socket goes
 * (sun_path's limit, a folder of the user's alone), and what the policies read as the wire carries it.
 */
import { expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { policyFacts, readsFromWire } from "../../src/middleware/cedar-policies.ts";
import { evaluatorSocketPath, privateSocketFolder } from "../../src/middleware/cedar-socket.ts";
import { evaluatorSocketName } from "../../src/state/cedar-socket-path.ts";
import { LineReader } from "../../src/middleware/cedar-wire.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import type { McpmgrError } from "../../src/errors.ts";
import { thrown } from "../support/errors.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

/** The STATE_UNSAFE error `fn` throws. */
const unsafe = (fn: () => unknown): McpmgrError => thrown(fn, "STATE_UNSAFE");

test("frames are lines, whole whatever the chunks; a line past the bound ends the reading", () => {
  const lines: string[] = [];
  const reader = new LineReader(10, (line) => lines.push(line));
  expect(reader.push(bytes('{"a":1}\n{"b"'))).toBe(true);
  expect(reader.push(bytes(':2}\n\n{"c":3}\n'))).toBe(true);
  expect(lines).toEqual(['{"a":1}', '{"b":2}', "", '{"c":3}']);
  expect(reader.push(bytes("0123456"))).toBe(true);
  expect(reader.push(bytes("7890"))).toBe(false);
  expect(new LineReader(10, () => {}).push(bytes("01234567890\n"))).toBe(false);
  const split: string[] = [];
  const utf8 = new LineReader(100, (line) => split.push(line));
  const text = bytes("é€\n");
  utf8.push(text.subarray(0, 1));
  utf8.push(text.subarray(1));
  expect(split).toEqual(["é€"]);
});

test("the socket is in the home's runtime folder, or in a short private folder named after it past sun_path's limit", () => {
  const short = resolvePaths({ MCPMGR_HOME: "/tmp/h" }, "linux", "/home/u");
  expect(evaluatorSocketPath(short, 1000)).toMatch(/^\/tmp\/h\/run\/cedar\/evaluator-v2-[0-9a-f]{12}\.sock$/);
  const longHome = (tail: string) => resolvePaths({ MCPMGR_HOME: `/tmp/${"x".repeat(100)}${tail}` }, "linux", "/");
  const one = evaluatorSocketPath(longHome("1"), 1000);
  const two = evaluatorSocketPath(longHome("2"), 1000);
  for (const path of [one, two]) {
    expect(Buffer.byteLength(path)).toBeLessThanOrEqual(107);
    expect(path).toMatch(/\/mcpmgr-cedar-1000-[0-9a-f]+\/evaluator-v2-[0-9a-f]{12}\.sock$/);
  }
  expect(one).not.toBe(two);
  expect(evaluatorSocketPath(longHome("1"), 1000)).toBe(one);
});

test("the socket's folder is made 0700, and one open to others, a link or another's is refused", () => {
  const base = mkdtempSync(join(tmpdir(), "mcpmgr-cedar-socket-"));
  const made = privateSocketFolder(join(base, "run", "cedar", "evaluator.sock"));
  expect(statSync(made).mode & 0o777).toBe(0o700);
  const open = join(base, "open");
  mkdirSync(open);
  chmodSync(open, 0o750);
  expect(unsafe(() => privateSocketFolder(join(open, "evaluator.sock"))).message).toContain(
    "is open to other users (mode 750)",
  );
  const link = join(base, "link");
  symlinkSync(made, link);
  expect(unsafe(() => privateSocketFolder(join(link, "evaluator.sock"))).message).toContain("is a link");
  const uid = (process.getuid?.() ?? 0) + 1;
  expect(unsafe(() => privateSocketFolder(join(made, "evaluator.sock"), uid)).message).toMatch(
    /belongs to uid|in another user's reach/,
  );
  // Another user's folder (made first at the temporary place): not the user's to remove or chmod, so
  // the way out is the socket elsewhere.
  const squatted = join(base, "squatted");
  mkdirSync(squatted, { mode: 0o700 });
  chownSync(squatted, 65534, 65534);
  const foreign = unsafe(() => privateSocketFolder(join(squatted, "evaluator.sock"), process.getuid?.()));
  expect(foreign.message).toContain("belongs to uid 65534");
  expect(foreign.hint).toContain("XDG_RUNTIME_DIR");
  expect(foreign.hint).not.toContain("chmod");
});

test("what the policies read crosses the wire unchanged: in all, and per resource a policy is scoped to", () => {
  const facts = policyFacts(
    [
      'permit(principal, action, resource == Tool::"transfer") when { context.arg_amount < 100 };',
      "permit(principal, action, resource) when { context has claim_team && context.arg_t.limit > 1 };",
      'forbid(principal, action, resource == Tool::"odd\\0name") when { context.arg_x == 1 };',
    ].join("\n"),
  );
  const reads = readsFromWire(JSON.parse(JSON.stringify(facts.wire)));
  const plain = (r: { whole: boolean; attributes: ReadonlySet<string>; nested: ReadonlySet<string> }) => ({
    whole: r.whole,
    attributes: [...r.attributes].sort(),
    nested: [...r.nested].sort(),
  });
  expect(plain(reads.reads)).toEqual(plain(facts.reads));
  for (const [type, id] of [
    ["Tool", "transfer"],
    ["Tool", "other"],
    ["Tool", "odd\u0000name"],
    ["Prompt", "transfer"],
  ] as const)
    expect(plain(reads.readsFor(type, id))).toEqual(plain(facts.readsFor(type, id)));
  expect(plain(reads.readsFor("Tool", "transfer")).attributes).toEqual(["arg_amount", "arg_t", "claim_team"]);
});

test("the socket's name tells builds apart (version, commit, executable, source tree), at one length", () => {
  const build = { version: "1.2.3", commit: "a".repeat(40), executable: "/usr/local/bin/mcpmgr", source: "" };
  const names = new Set([
    evaluatorSocketName(build),
    evaluatorSocketName({ ...build, version: "1.2.4" }),
    evaluatorSocketName({ ...build, commit: "b".repeat(40) }),
    evaluatorSocketName({ ...build, executable: "/opt/mcpmgr" }),
    evaluatorSocketName({ ...build, commit: "development", source: "/src/a" }),
    evaluatorSocketName({ ...build, commit: "development", source: "/src/b" }),
  ]);
  expect(names.size).toBe(6);
  expect(new Set([...names].map((name) => name.length))).toEqual(new Set([evaluatorSocketName().length]));
  expect(evaluatorSocketName(build)).toBe(evaluatorSocketName({ ...build }));
});
