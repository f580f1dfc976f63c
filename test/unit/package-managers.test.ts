/**
 * scripts/package-managers.ts: the Homebrew formula and the scoop manifest of a release.
 * SHA256SUMS is written by `sha256sum` itself (the format users check with), the formula
 * goes through Ruby (`ruby -c`, then loaded with a recorder of the few Homebrew DSL calls it
 * makes, per OS and CPU), and the manifest through scoop's schema constraints and scoop's
 * way of reading a hash out of SHA256SUMS.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseChecksums } from "../../scripts/lib/checksums.ts";
import { releaseTargets } from "../../scripts/lib/release-targets.ts";
import { validateScoopManifest } from "../../scripts/lib/scoop-manifest-schema.ts";
import { REPO_ROOT } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const VERSION = "1.4.2";
const BASE = `https://github.com/acme/mcpmgr/releases/download/v${VERSION}`;

let work: string;
let dist: string;
let sums: Map<string, string>;

function generate(args: string[], distDir = dist) {
  const run = Bun.spawnSync([process.execPath, "scripts/package-managers.ts", "--dist", distDir, ...args], {
    cwd: REPO_ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: run.exitCode, stderr: run.stderr.toString() };
}

/** Loads the formula in Ruby with a recorder standing in for Homebrew's DSL, as if on `os`/`arch`. */
function formulaOn(os: "macos" | "linux", arch: "arm" | "intel"): Record<string, unknown> {
  const recorder = `
    require "json"
    OS_NAME, ARCH = ARGV[1], ARGV[2]
    class Formula
      RECORDED = Hash.new { |h, k| h[k] = [] }
      %i[desc homepage version license url sha256].each do |name|
        define_singleton_method(name) { |value| RECORDED[name] << value }
      end
      def self.on_macos = (yield if OS_NAME == "macos")
      def self.on_linux = (yield if OS_NAME == "linux")
      def self.on_arm = (yield if ARCH == "arm")
      def self.on_intel = (yield if ARCH == "intel")
      def self.test(&block) = RECORDED[:test] << !block.nil?
      # install's view of Homebrew: the staged download in the current folder, and bin/.
      class Bin
        def install(mapping) = RECORDED[:install] << mapping
      end
      def bin = Bin.new
    end
    load ARGV[0]
    Dir.chdir(ARGV[3]) { Object.const_get(:Mcpmgr).allocate.install }
    puts JSON.generate(Formula::RECORDED)
  `;
  const stage = join(work, `stage-${os}-${arch}`);
  const file = `mcpmgr-${os === "macos" ? "darwin" : "linux"}-${arch === "arm" ? "arm64" : "x64"}`;
  Bun.spawnSync(["mkdir", "-p", stage]);
  Bun.spawnSync(["touch", join(stage, file)]);
  const ruby = Bun.spawnSync(["ruby", "-e", recorder, join(dist, "homebrew/mcpmgr.rb"), os, arch, stage], {
    stdout: "pipe",
    stderr: "pipe",
  });
  if (ruby.exitCode !== 0) throw new Error(`ruby failed: ${ruby.stderr.toString()}`);
  return JSON.parse(ruby.stdout.toString());
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "mcpmgr-package-managers-"));
  dist = join(work, "dist");
  await mkdir(dist);
  // Stand-ins for the binaries (the generator reads only SHA256SUMS); sha256sum writes the sums.
  for (const { file } of releaseTargets) await writeFile(join(dist, file), `contents of ${file}\n`);
  const sha = Bun.spawnSync(["sha256sum", ...releaseTargets.map((t) => t.file)], { cwd: dist, stdout: "pipe" });
  expect(sha.exitCode).toBe(0);
  await writeFile(join(dist, "SHA256SUMS"), sha.stdout);
  sums = parseChecksums(sha.stdout.toString());
  const run = generate(["--version", VERSION, "--base-url", BASE]);
  expect(run.stderr).toContain("wrote");
  expect(run.code).toBe(0);
});

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

describe("Homebrew formula", () => {
  test("parses (ruby -c)", () => {
    const check = Bun.spawnSync(["ruby", "-c", join(dist, "homebrew/mcpmgr.rb")], { stdout: "pipe", stderr: "pipe" });
    expect(check.stdout.toString().trim()).toBe("Syntax OK");
    expect(check.exitCode).toBe(0);
  });

  test.each([
    ["macos", "arm", "mcpmgr-darwin-arm64"],
    ["macos", "intel", "mcpmgr-darwin-x64"],
    ["linux", "arm", "mcpmgr-linux-arm64"],
    ["linux", "intel", "mcpmgr-linux-x64"],
  ] as const)(
    "on %s/%s it downloads %s with the digest from SHA256SUMS and installs it as mcpmgr",
    (os, arch, file) => {
      const recorded = formulaOn(os, arch);
      expect(recorded.url).toEqual([`${BASE}/${file}`]);
      expect(recorded.sha256).toEqual([sums.get(file)]);
      expect(recorded.version).toEqual([VERSION]);
      expect(recorded.homepage).toEqual(["https://github.com/acme/mcpmgr"]);
      expect(recorded.install).toEqual([{ [file]: "mcpmgr" }]);
      expect(recorded.test).toEqual([true]);
    },
  );

  test("its test runs `mcpmgr --version` and looks for the version", async () => {
    const formula = await readFile(join(dist, "homebrew/mcpmgr.rb"), "utf8");
    expect(formula).toContain('assert_match version.to_s, shell_output("#{bin}/mcpmgr --version")');
  });
});

describe("scoop manifest", () => {
  let manifest: Record<string, any>;
  beforeAll(async () => {
    manifest = JSON.parse(await readFile(join(dist, "scoop/mcpmgr.json"), "utf8"));
  });

  test("validates against scoop's schema constraints", () => {
    expect(() => validateScoopManifest(manifest)).not.toThrow();
  });

  test("downloads the Windows binary with its SHA256SUMS digest, saved and run as mcpmgr.exe", () => {
    expect(manifest.version).toBe(VERSION);
    expect(manifest.architecture["64bit"].url).toBe(`${BASE}/mcpmgr-windows-x64.exe#/mcpmgr.exe`);
    expect(manifest.architecture["64bit"].hash).toBe(sums.get("mcpmgr-windows-x64.exe"));
    expect(manifest.bin).toBe("mcpmgr.exe");
    expect(manifest.checkver).toEqual({ github: "https://github.com/acme/mcpmgr" });
  });

  test("autoupdate yields this release's URL for this version, and finds the digest in SHA256SUMS as scoop does", async () => {
    const auto = manifest.autoupdate.architecture["64bit"];
    expect(auto.url.replaceAll("$version", VERSION)).toBe(manifest.architecture["64bit"].url);
    // scoop: $baseurl is the URL without fragment and file name; $sha256 is a 64-hex group.
    const baseurl = auto.url.replace(/#.*$/, "").replace(/\/[^/]+$/, "");
    expect(auto.hash.url.replace("$baseurl", baseurl).replaceAll("$version", VERSION)).toBe(`${BASE}/SHA256SUMS`);
    const regex = new RegExp(auto.hash.regex.replace("$sha256", "([a-fA-F0-9]{64})"));
    const text = await readFile(join(dist, "SHA256SUMS"), "utf8");
    expect(regex.exec(text)?.[1]).toBe(sums.get("mcpmgr-windows-x64.exe"));
  });

  test.each([
    ["an unknown field", { extra: 1 }, "extra"],
    ["a malformed hash", { architecture: { "64bit": { url: "https://x.test/a.exe", hash: "abc" } } }, "hash"],
    [
      "a placeholder in a download URL",
      { architecture: { "64bit": { url: "https://x.test/$version.exe", hash: "a".repeat(64) } } },
      "url",
    ],
    ["a version scoop cannot use", { version: "1.0 beta" }, "version"],
  ])("the schema rejects %s", (_what, change, field) => {
    expect(() => validateScoopManifest({ ...manifest, ...change })).toThrow(field);
  });
});

describe("bad input is one line, and nothing is written", () => {
  test.each([
    [["--version", "v1.4.2", "--base-url", BASE], "expected x.y.z"],
    [["--version", VERSION, "--base-url", BASE.replace("https:", "http:")], "must be https://"],
    [
      ["--version", VERSION, "--base-url", "https://github.com/acme/mcpmgr/releases/download/latest"],
      "must contain the version",
    ],
    [["--version", VERSION, "--base-url", "https://downloads.example.com/1.4.2"], "--homepage is required"],
    [["--version", VERSION], "usage:"],
  ])("%j", (args, message) => {
    const run = generate(args, join(work, "nothing"));
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toContain(message);
  });

  test("a SHA256SUMS without a target's binary names the file", async () => {
    const partial = join(work, "partial");
    await mkdir(partial);
    await writeFile(join(partial, "SHA256SUMS"), `${"a".repeat(64)}  mcpmgr-linux-x64\n`);
    const run = generate(["--version", VERSION, "--base-url", BASE], partial);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("SHA256SUMS does not list mcpmgr-darwin-arm64");
  });

  test("a missing SHA256SUMS says how to make it", () => {
    const run = generate(["--version", VERSION, "--base-url", BASE], join(work, "empty"));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("run 'bun run compile --all' first");
  });
});
