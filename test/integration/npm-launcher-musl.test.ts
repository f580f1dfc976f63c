/**
 * musl (Alpine) releases: the real musl executable, cross-compiled here (`compile --target
 * linux-x64-musl`) and packed (`pack --only linux-x64-musl`), is one for musl by its header
 * (the release gate's check), its npm package says `libc: musl`, and the launcher, installed
 * beside it as npm lays packages out, picks it on a musl system and the glibc one otherwise.
 * This machine is glibc and has no Alpine image: the musl executable is not started here
 * (see the release32 findings for what was run by hand with Debian's musl loader).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { assertBinaryFor, elfInterpreter } from "../../scripts/lib/binary-format.ts";
import { targetById } from "../../scripts/lib/release-targets.ts";
import { REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

let work: string;
let dist: string;
let modules: string;

async function sh(cmd: string[], cwd = REPO_ROOT): Promise<string> {
  const proc = Bun.spawn(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) throw new Error(`${cmd.join(" ")} failed (${code}): ${stderr.trim()}`);
  return stdout;
}

/** `npm install`'s layout: each tarball's package/ in node_modules/NAME (no platform check: this machine is glibc). */
async function unpack(tarball: string, name: string): Promise<void> {
  const dir = join(modules, name);
  await mkdir(dir, { recursive: true });
  await sh(["tar", "-xzf", tarball, "-C", dir, "--strip-components=1"]);
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "mcpmgr-launcher-musl-"));
  dist = join(work, "dist");
  modules = join(work, "node_modules");
  await sh([process.execPath, "scripts/compile.ts", "--target", "linux-x64-musl", "--outdir", dist]);
  await sh([process.execPath, "scripts/pack.ts", "--dist", dist, "--only", "linux-x64-musl"]);
  await unpack(join(dist, "npm", `mcpmgr-linux-x64-musl-${pkg.version}.tgz`), "mcpmgr-linux-x64-musl");
  await unpack(join(dist, "npm", `mcpmgr-${pkg.version}.tgz`), "mcpmgr");
  // The glibc package beside it, as a package manager that ignores "libc" installs both
  // (its binary's contents do not matter to the choice).
  const glibc = join(modules, "mcpmgr-linux-x64");
  await mkdir(join(glibc, "bin"), { recursive: true });
  await writeFile(join(glibc, "package.json"), JSON.stringify({ name: "mcpmgr-linux-x64", version: pkg.version }));
  await writeFile(join(glibc, "bin", "mcpmgr"), "");
}, 300_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

test("the musl build names musl's loader, passes the release gate's header check as linux-x64-musl, and not as linux-x64", async () => {
  const binary = join(dist, "mcpmgr-linux-x64-musl");
  const header = new Uint8Array(await Bun.file(binary).slice(0, 4096).arrayBuffer());
  expect(elfInterpreter(header)).toBe("/lib/ld-musl-x86_64.so.1");
  await assertBinaryFor(binary, targetById("linux-x64-musl"));
  await expect(assertBinaryFor(binary, targetById("linux-x64"))).rejects.toThrow(
    "is linux-x64-musl, not a linux-x64 executable",
  );
  const sums = await readFile(join(dist, "SHA256SUMS"), "utf8");
  expect(sums).toMatch(/^[0-9a-f]{64} {2}mcpmgr-linux-x64-musl\n$/);
});

test("its npm package declares libc musl, and mcpmgr lists it among its optional dependencies", async () => {
  const musl = JSON.parse(await readFile(join(modules, "mcpmgr-linux-x64-musl", "package.json"), "utf8"));
  expect(musl).toMatchObject({ os: ["linux"], cpu: ["x64"], libc: ["musl"] });
  const launcher = JSON.parse(await readFile(join(modules, "mcpmgr", "package.json"), "utf8"));
  expect(Object.keys(launcher.optionalDependencies)).toEqual(
    expect.arrayContaining(["mcpmgr-linux-x64", "mcpmgr-linux-x64-musl", "mcpmgr-linux-arm64-musl"]),
  );
});

describe.each([
  ["node", Bun.which("node")],
  ["bun", process.execPath],
])("the installed launcher under %s", (_name, runtime) => {
  /** The launcher's choice, asked of the installed package (`findBinary`), musl as given or as detected here. */
  async function choice(musl: boolean | undefined): Promise<string> {
    if (runtime === null) throw new Error("this test needs node on PATH");
    const arg = musl === undefined ? "" : String(musl);
    const script = `process.stdout.write(require("mcpmgr/bin/mcpmgr.cjs").findBinary(${arg}))`;
    return sh([runtime, "-e", script], work);
  }

  test("picks the musl executable on a musl system and the glibc one on this glibc system", async () => {
    expect(await choice(true)).toBe(join(modules, "mcpmgr-linux-x64-musl", "bin", "mcpmgr"));
    expect(await choice(false)).toBe(join(modules, "mcpmgr-linux-x64", "bin", "mcpmgr"));
    expect(await choice(undefined)).toBe(join(modules, "mcpmgr-linux-x64", "bin", "mcpmgr"));
  });

  test("tells musl from glibc the way this system and Alpine show it", async () => {
    if (runtime === null) throw new Error("this test needs node on PATH");
    const script = `
      const { muslFrom, isMusl } = require("mcpmgr/bin/mcpmgr.cjs");
      const fs = require("node:fs");
      const here = process.report.getReport();
      process.stdout.write(JSON.stringify([
        isMusl(),
        muslFrom({ ldd: fs.readFileSync("/usr/bin/ldd", "latin1") }),
        muslFrom({ report: here }),
        // Alpine: ldd is a script running musl's loader; the report has no glibc version and lists that loader.
        muslFrom({ ldd: '#!/bin/sh\\nexec /lib/ld-musl-x86_64.so.1 --list -- "$@"\\n' }),
        muslFrom({ report: { header: {}, sharedObjects: ["/lib/ld-musl-x86_64.so.1", "/usr/lib/libstdc++.so.6"] } }),
        muslFrom({ report: { header: {} }, libNames: ["ld-musl-aarch64.so.1", "libz.so.1"] }),
        // Debian with its musl package: glibc, though musl's loader is in /lib.
        muslFrom({ report: here, libNames: ["ld-musl-x86_64.so.1"] }),
      ]));`;
    expect(JSON.parse(await sh([runtime, "-e", script], work))).toEqual([false, false, false, true, true, true, false]);
  });
});
