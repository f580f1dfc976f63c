/**
 * `mcpmgr version`: version, commit, build date, runtime and platform, as text or JSON. From
 * source the build facts read "development"; scripts/compile.ts computes them for a build
 * (test/e2e/binary.test.ts checks them in the executable).
 */
import { expect, test, setDefaultTimeout } from "bun:test";
import pkg from "../../package.json" with { type: "json" };
import { buildDate, buildInfo } from "../../scripts/compile.ts";
import { REPO_ROOT } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

function mcpmgr(...args: string[]) {
  const result = Bun.spawnSync([process.execPath, "src/main.ts", ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1" },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { exitCode: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

test("version --format json: version, commit, build date, Bun, os and arch", () => {
  const result = mcpmgr("version", "--format", "json");
  expect(result.exitCode).toBe(0);
  expect(JSON.parse(result.stdout)).toEqual({
    version: pkg.version,
    commit: "development",
    buildDate: "development",
    bun: Bun.version,
    os: process.platform,
    arch: process.arch,
  });
});

test("version as text: one line per fact, the version first", () => {
  const result = mcpmgr("version");
  expect(result.exitCode).toBe(0);
  const lines = result.stdout.trimEnd().split("\n");
  expect(lines[0]).toBe(`mcpmgr ${pkg.version}`);
  expect(lines.slice(1).map((line) => line.trim().split(":")[0])).toEqual(["commit", "built", "runtime", "platform"]);
  expect(result.stdout).toContain(`Bun ${Bun.version}`);
  expect(result.stdout).toContain(`${process.platform}/${process.arch}`);
});

test("version takes no arguments", () => {
  const result = mcpmgr("version", "now");
  expect(result.exitCode).toBe(2);
  expect(result.stdout).toBe("");
});

test("the build date is the build's time, or SOURCE_DATE_EPOCH for a reproducible build", () => {
  expect(buildDate("0")).toBe("1970-01-01T00:00:00Z");
  expect(buildDate("1767225600")).toBe("2026-01-01T00:00:00Z");
  expect(buildDate(undefined, new Date("2026-11-25T13:05:17.123Z"))).toBe("2026-11-25T13:05:17Z");
  expect(buildDate("", new Date("2026-11-25T13:05:17.123Z"))).toBe("2026-11-25T13:05:17Z");
  expect(() => buildDate("yesterday")).toThrow("SOURCE_DATE_EPOCH");
});

test("a build from this checkout carries its commit, and its first 12 characters in the version", () => {
  const head = Bun.spawnSync(["git", "rev-parse", "HEAD"], { cwd: REPO_ROOT }).stdout.toString().trim();
  const info = buildInfo({ SOURCE_DATE_EPOCH: "86400" });
  expect(info.commit).toBe(head);
  // A fixed length, not git's default that grows with the object count (a shallow clone would differ).
  expect(info.version).toBe(`${pkg.version}+${head.slice(0, 12)}`);
  expect(info.date).toBe("1970-01-02T00:00:00Z");
});
