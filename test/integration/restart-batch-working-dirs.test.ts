/**
 * `restart` of several workloads created in different folders from relative paths: each restart's
 * check resolves its workload in the folder `run` was given in. The process has one working
 * directory, so checks run side by side must not read one workload's `./pkg` in another's folder.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { cpSync, mkdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv } from "../support/cli-home.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

// Real supervisors and servers, several per command.
setDefaultTimeout(60_000);

let dir: string;

function mcpmgr(cwd: string, ...args: string[]) {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
    cwd,
    env: cliEnv(dir),
    stdin: "ignore",
    timeout: 120_000,
  });
  return { code: result.exitCode, stderr: result.stderr.toString() };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-restart-dirs-"));
  // Each project folder holds only its own package: read in the other folder, it is not there.
  for (const name of ["aa", "bb", "cc"]) {
    const project = join(dir, `project-${name}`);
    mkdirSync(project);
    cpSync(join(REPO_ROOT, "test/fixtures/sandbox-probe"), join(project, `pkg-${name}`), { recursive: true });
    const run = mcpmgr(project, "run", `npx://./pkg-${name}`, "--name", name);
    expect([name, run.code, run.code === 0 ? "" : run.stderr]).toEqual([name, 0, ""]);
  }
}, 180_000);

afterAll(async () => {
  mcpmgr(dir, "rm", "--all");
  await rm(dir, { recursive: true, force: true });
});

test("restart of workloads from relative paths in different folders: each resolved in its own folder", () => {
  const restarted = mcpmgr(dir, "restart", "aa", "bb", "cc");
  expect(restarted.stderr).not.toContain("[error]");
  expect(restarted.code).toBe(0);
  for (const name of ["aa", "bb", "cc"]) expect(restarted.stderr).toContain(`[info] restarted ${name} at http://`);
});

test("a failure among several names its workload: a folder gone says whose it was", async () => {
  await rm(join(dir, "project-cc"), { recursive: true, force: true });
  const restarted = mcpmgr(dir, "restart", "aa", "cc");
  expect(restarted.code).toBe(1);
  expect(restarted.stderr).toContain(`[error] cc: its working directory ${join(dir, "project-cc")} is gone`);
  expect(restarted.stderr).toContain("[info] restarted aa at http://");
});
