/**
 * A server that never answers initialize is given minutes (npx/uvx may be downloading its package):
 * `run` (in the background or the foreground) says once, after some seconds, that it is still starting
 * and where its output is, rather than staying silent until it gives up; Ctrl-C then leaves nothing behind.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, runCli } from "../support/cli-home.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";
import { spawnUntilNotice } from "../support/until-notice.ts";

setDefaultTimeout(60_000);

let root: string;
let env: Record<string, string>;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "mcpmgr-still-starting-"));
  env = cliEnv(root);
});

afterAll(async () => {
  runCli(env, ["rm", "quiet"]);
  await rm(root, { recursive: true, force: true });
});

/** `mcpmgr ARGS` spawned, its stderr read until `notice` (at most 40 s): what it printed, and the read to go on with. */
const untilNotice = (args: readonly string[], notice: string) =>
  spawnUntilNotice([process.execPath, CLI_ENTRY, ...args], { cwd: REPO_ROOT, env }, notice, 40_000);

test("run of a server that never answers says it is still starting, and Ctrl-C leaves nothing", async () => {
  const notice = "quiet is still starting: its server has not answered yet";
  const { run, stderr, interrupt } = await untilNotice(
    ["run", "npx://./test/fixtures/never-answers", "--name", "quiet"],
    notice,
  );
  expect(stderr).toContain(notice);
  expect(stderr).toContain("'mcpmgr logs quiet' shows what it printed so far");
  expect(run.exitCode).toBeNull();

  const ended = await interrupt();
  expect(ended.code).not.toBe(0);
  expect(ended.stderr).toContain("the workload was not kept");
  expect(ended.stderr).not.toContain("    at ");
  expect(runCli(env, ["list", "--format", "json"]).stdout.trim()).toBe("[]");
});

test("run --foreground of a server that never answers says so too, once, and where its output is", async () => {
  const notice = "hushed is still starting: its server has not answered yet";
  const { run, stderr, interrupt } = await untilNotice(
    ["run", "--foreground", "npx://./test/fixtures/never-answers", "--name", "hushed"],
    notice,
  );
  expect(stderr).toContain(notice);
  expect(stderr).toContain("run it with --debug to see what it prints");
  expect(run.exitCode).toBeNull();
  const ended = await interrupt();
  expect(ended.code).not.toBe(0);
  expect(ended.stderr.split(notice)).toHaveLength(2);
  expect(ended.stderr).toContain("stopped hushed while it was starting");
  expect(ended.stderr).not.toContain("    at ");
});

test("run --foreground --debug, which shows the server's output already, is not told to run with --debug", async () => {
  const notice = "loud is still starting: its server has not answered yet";
  const { run, stderr, interrupt } = await untilNotice(
    ["run", "--foreground", "--debug", "npx://./test/fixtures/never-answers", "--name", "loud"],
    notice,
  );
  expect(stderr).toContain("[debug] loud stderr: never-answers: up, and silent");
  expect(stderr).toContain(`${notice} (a first start may be downloading its package); what it prints shows here`);
  expect(stderr).not.toContain("run it with --debug");
  expect(run.exitCode).toBeNull();
  expect((await interrupt()).code).not.toBe(0);
});
