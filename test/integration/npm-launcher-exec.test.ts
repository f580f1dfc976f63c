/**
 * packaging/npm/launcher.cjs when the executable it found cannot be started, under Node and
 * under Bun (the two runtimes docs/install.md says run it). The commonest case is real: npm
 * installs the glibc-linked mcpmgr-linux-x64 on Alpine (musl), where the file is there but
 * its loader is not, so exec fails with ENOENT for a file that exists. Each must be one line
 * that says what is wrong, exit 1, and no stack trace (Bun's execve throws).
 * The launcher runs from a package folder laid out as npm installs it, with MCPMGR_BINARY
 * naming the executable (the launcher's documented override), so no binary is compiled here.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmod, copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

let work: string;
let launcher: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "mcpmgr-launcher-exec-"));
  const pkgDir = join(work, "node_modules", "mcpmgr");
  await mkdir(join(pkgDir, "bin"), { recursive: true });
  launcher = join(pkgDir, "bin", "mcpmgr.cjs");
  await copyFile(join(REPO_ROOT, "packaging/npm/launcher.cjs"), launcher);
  await writeFile(join(pkgDir, "package.json"), JSON.stringify({ name: "mcpmgr", version: "9.9.9" }));
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** An executable file whose loader does not exist here, as a glibc build is on a musl system. */
async function withoutItsLoader(): Promise<string> {
  const file = join(work, "needs-a-missing-loader");
  await writeFile(file, "#!/lib/ld-mcpmgr-test-missing.so.1\n");
  await chmod(file, 0o755);
  return file;
}

async function launch(runtime: string, binary: string) {
  const proc = Bun.spawn([runtime, launcher, "--version"], {
    cwd: work,
    env: { ...process.env, MCPMGR_BINARY: binary },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

describe.each([
  ["node", Bun.which("node")],
  ["bun", process.execPath],
])("the launcher under %s", (_name, runtime) => {
  test("an executable that exists but cannot start (its loader is missing) is explained in one line", async () => {
    if (runtime === null) throw new Error("this test needs node on PATH");
    const binary = await withoutItsLoader();
    const result = await launch(runtime, binary);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toStartWith(`mcpmgr: cannot start ${binary}`);
    expect(lines[0]).toContain("glibc");
    expect(lines[0]).toContain("MCPMGR_BINARY");
    expect(result.stderr).not.toContain("    at ");
  });

  test("an executable that is not executable is explained in one line", async () => {
    if (runtime === null) throw new Error("this test needs node on PATH");
    const binary = join(work, "not-executable");
    await writeFile(binary, "#!/bin/sh\necho never\n");
    await chmod(binary, 0o644);
    const result = await launch(runtime, binary);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toStartWith(`mcpmgr: cannot start ${binary}`);
    expect(result.stderr).not.toContain("    at ");
  });
});
