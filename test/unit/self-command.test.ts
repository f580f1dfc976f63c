/**
 * The executable named in an AI client's entry: under a Homebrew Cellar (a versioned folder
 * the next upgrade removes) Homebrew's stable link to the same file, with real files and links
 * laid out as Homebrew lays them out.
 */
import { afterEach, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stableExecutablePath } from "../../src/workload/self-command.ts";

let prefix: string;

/** PREFIX/Cellar/mcpmgr/VERSION/bin/mcpmgr, a real file. */
function install(version: string): string {
  const dir = join(prefix, "Cellar", "mcpmgr", version, "bin");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "mcpmgr"), `#!/bin/sh\n# ${version}\n`, { mode: 0o755 });
  return join(dir, "mcpmgr");
}

function link(target: string, at: string): void {
  mkdirSync(join(at, ".."), { recursive: true });
  symlinkSync(target, at);
}

afterEach(() => rmSync(prefix, { recursive: true, force: true }));

test("a Cellar executable is named by PREFIX/opt/FORMULA, which Homebrew keeps across upgrades", () => {
  prefix = mkdtempSync(join(tmpdir(), "mcpmgr-brew-"));
  const cellar = install("0.1.0");
  link("../Cellar/mcpmgr/0.1.0", join(prefix, "opt", "mcpmgr"));
  link("../Cellar/mcpmgr/0.1.0/bin/mcpmgr", join(prefix, "bin", "mcpmgr"));
  expect(stableExecutablePath(cellar)).toBe(join(prefix, "opt", "mcpmgr", "bin", "mcpmgr"));
});

test("without opt, PREFIX/bin; a link to another version is never named; no link: the Cellar path", () => {
  prefix = mkdtempSync(join(tmpdir(), "mcpmgr-brew-"));
  const old = install("0.1.0");
  install("0.2.0");
  // opt already points at the newer version: naming it would run another mcpmgr than this one.
  link("../Cellar/mcpmgr/0.2.0", join(prefix, "opt", "mcpmgr"));
  expect(stableExecutablePath(old)).toBe(old);
  link("../Cellar/mcpmgr/0.1.0/bin/mcpmgr", join(prefix, "bin", "mcpmgr"));
  expect(stableExecutablePath(old)).toBe(join(prefix, "bin", "mcpmgr"));
});

test("paths outside a Cellar are kept as they are", () => {
  prefix = mkdtempSync(join(tmpdir(), "mcpmgr-plain-"));
  const plain = join(prefix, "mcpmgr");
  writeFileSync(plain, "#!/bin/sh\n", { mode: 0o755 });
  expect(stableExecutablePath(plain)).toBe(plain);
  expect(stableExecutablePath(join(prefix, "missing"))).toBe(join(prefix, "missing"));
});
