/**
 * `bun run compile --all`: one binary per release target, each of the right format,
 * and a SHA256SUMS that matches them; then the release gate (scripts/verify-release.ts)
 * accepts exactly that, and refuses a wrong tag or a binary changed after the build.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { createHash } from "node:crypto";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { REPO_ROOT } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const dist = join(REPO_ROOT, "dist");
let scratch: string;

const magic: Readonly<Record<string, (bytes: Uint8Array) => boolean>> = {
  linux: (b) => b[0] === 0x7f && b[1] === 0x45 && b[2] === 0x4c && b[3] === 0x46, // ELF
  darwin: (b) => b[0] === 0xcf && b[1] === 0xfa && b[2] === 0xed && b[3] === 0xfe, // Mach-O 64
  windows: (b) => b[0] === 0x4d && b[1] === 0x5a, // MZ
};

function verifyRelease(args: string[]) {
  const run = Bun.spawnSync([process.execPath, "scripts/verify-release.ts", ...args], {
    cwd: REPO_ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: run.exitCode, stdout: run.stdout.toString(), stderr: run.stderr.toString() };
}

beforeAll(async () => {
  const build = Bun.spawnSync([process.execPath, "run", "compile", "--all"], {
    cwd: REPO_ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (build.exitCode !== 0) throw new Error(`compile --all failed:\n${build.stderr.toString()}`);
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-compile-all-"));
}, 300_000);

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

test("every release binary is built and listed in SHA256SUMS with its real digest", async () => {
  const sums = (await readFile(join(dist, "SHA256SUMS"), "utf8")).trim().split("\n");
  const files = sums.map((line) => line.split(/\s+/)[1]);
  expect(files).toEqual([
    "mcpmgr-linux-x64",
    "mcpmgr-linux-arm64",
    "mcpmgr-linux-x64-musl",
    "mcpmgr-linux-arm64-musl",
    "mcpmgr-darwin-x64",
    "mcpmgr-darwin-arm64",
    "mcpmgr-windows-x64.exe",
  ]);
  for (const line of sums) {
    const [digest, file] = line.split(/\s+/) as [string, string];
    const bytes = new Uint8Array(await readFile(join(dist, file)));
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(digest);
    const os = file.split("-")[1] as string;
    expect(magic[os]?.(bytes)).toBe(true);
  }
  // sha256sum itself agrees (the command the install docs give users).
  const check = Bun.spawnSync(["sha256sum", "--check", "--strict", "SHA256SUMS"], { cwd: dist, stdout: "pipe" });
  expect(check.exitCode).toBe(0);
  // Reads and hashes the seven binaries (about 0.9 GB) twice, ours and sha256sum's: seconds, more under load.
}, 60_000);

test("the release gate accepts the build for the tag of package.json's version and lists the assets", () => {
  const version = verifyRelease(["--tag", `v${pkg.version}`]);
  expect(version.stderr).toBe("");
  expect(version.stdout.trim()).toBe(pkg.version);
  const assets = verifyRelease(["--tag", `v${pkg.version}`, "--print", "assets"]);
  expect(assets.stdout.trim().split("\n")).toEqual(
    [
      "mcpmgr-linux-x64",
      "mcpmgr-linux-arm64",
      "mcpmgr-linux-x64-musl",
      "mcpmgr-linux-arm64-musl",
      "mcpmgr-darwin-x64",
      "mcpmgr-darwin-arm64",
      "mcpmgr-windows-x64.exe",
      "SHA256SUMS",
    ].map((file) => join(dist, file)),
  );
  // Two runs of the gate, each hashing the seven binaries (about 0.9 GB) and starting this machine's one.
}, 120_000);

test("the release gate refuses a tag that is not package.json's version", () => {
  const run = verifyRelease(["--tag", "v99.0.0"]);
  expect(run.code).toBe(1);
  expect(run.stderr.trim()).toBe(
    `verify-release: tag v99.0.0 does not match package.json's version ${pkg.version}; bump package.json first`,
  );
});

test("the release gate refuses a binary changed after SHA256SUMS, and one built for another platform", async () => {
  const changed = join(scratch, "changed");
  await cp(dist, changed, { recursive: true });
  const bytes = new Uint8Array(await readFile(join(changed, "mcpmgr-darwin-arm64")));
  bytes[bytes.length - 1] = (bytes.at(-1) as number) ^ 0xff;
  await writeFile(join(changed, "mcpmgr-darwin-arm64"), bytes);
  const tampered = verifyRelease(["--tag", `v${pkg.version}`, "--dist", changed]);
  expect(tampered.code).toBe(1);
  expect(tampered.stderr).toContain("mcpmgr-darwin-arm64 does not match SHA256SUMS");

  // The Linux arm64 build under the x64 name, with a SHA256SUMS that agrees: the header gives it away.
  const swapped = join(scratch, "swapped");
  await cp(dist, swapped, { recursive: true });
  await cp(join(swapped, "mcpmgr-linux-arm64"), join(swapped, "mcpmgr-linux-x64"));
  const sha = Bun.spawnSync(
    [
      "sha256sum",
      "mcpmgr-linux-x64",
      "mcpmgr-linux-arm64",
      "mcpmgr-linux-x64-musl",
      "mcpmgr-linux-arm64-musl",
      "mcpmgr-darwin-x64",
      "mcpmgr-darwin-arm64",
      "mcpmgr-windows-x64.exe",
    ],
    {
      cwd: swapped,
      stdout: "pipe",
    },
  );
  await writeFile(join(swapped, "SHA256SUMS"), sha.stdout);
  const wrong = verifyRelease(["--tag", `v${pkg.version}`, "--dist", swapped]);
  expect(wrong.code).toBe(1);
  expect(wrong.stderr).toContain("mcpmgr-linux-x64 is linux-arm64, not a linux-x64 executable");

  // The glibc build under the musl name (same CPU): its loader gives it away.
  const glibcAsMusl = join(scratch, "glibc-as-musl");
  await cp(dist, glibcAsMusl, { recursive: true });
  await cp(join(glibcAsMusl, "mcpmgr-linux-x64"), join(glibcAsMusl, "mcpmgr-linux-x64-musl"));
  const sums = (await readFile(join(dist, "SHA256SUMS"), "utf8")).replace(
    /^[0-9a-f]{64}(?= {2}mcpmgr-linux-x64-musl$)/m,
    (await readFile(join(dist, "SHA256SUMS"), "utf8")).match(/^([0-9a-f]{64}) {2}mcpmgr-linux-x64$/m)?.[1] ?? "",
  );
  await writeFile(join(glibcAsMusl, "SHA256SUMS"), sums);
  const notMusl = verifyRelease(["--tag", `v${pkg.version}`, "--dist", glibcAsMusl]);
  expect(notMusl.code).toBe(1);
  expect(notMusl.stderr).toContain("mcpmgr-linux-x64-musl is linux-x64, not a linux-x64-musl executable");
}, 60_000);
