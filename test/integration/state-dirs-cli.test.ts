/**
 * Review 7: an MCPMGR_HOME another user made first (in a shared folder such as /tmp) lets them swap
 * a workload's record for their own, which the next `start` would run as this user. Every command
 * that reads state refuses such a home before reading anything; `--version` still answers.
 */
import { afterAll, expect, test, setDefaultTimeout } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli } from "../support/cli-home.ts";

setDefaultTimeout(60_000);

const OTHER = 61234;
const scratch = mkdtempSync(join(tmpdir(), "mcpmgr-state-dirs-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

test("a home planted by another user, with a record of theirs, is refused by every command that reads state", () => {
  const shared = join(scratch, "shared");
  mkdirSync(shared);
  chmodSync(shared, 0o1777);
  const home = join(shared, "mcpmgr");
  const recordDir = join(home, "state", "workloads", "w");
  mkdirSync(recordDir, { recursive: true });
  // What the other user plants: a record whose start would reach their server.
  writeFileSync(
    join(recordDir, "workload.json"),
    JSON.stringify({
      schema_version: 1,
      name: "w",
      source: { kind: "remote", ref: "http://127.0.0.1:9/mcp" },
      transport: "streamable-http",
      proxyPort: 9,
      runtime: "remote",
      runOptions: ["http://127.0.0.1:9/mcp", "--name", "w"],
    }),
  );
  for (const dir of [home, join(home, "state"), join(home, "state", "workloads"), recordDir]) {
    chownSync(dir, OTHER, OTHER);
    chmodSync(dir, 0o777);
  }
  const env = cliEnv(scratch, home);
  for (const args of [["list"], ["start", "w"], ["export", "w", "-"]]) {
    const line = expectOneLineError(runCli(env, args), 1);
    expect(line).toContain(`${home} belongs to uid ${OTHER}`);
  }
  expect(runCli(env, ["--version"]).code).toBe(0);
  // The bug-report command reads no state either: it answers where odd set-ups need it most.
  const version = runCli(env, ["version", "--format", "json"]);
  expect(version.code).toBe(0);
  expect(JSON.parse(version.stdout).version).toBeString();
  // Shell completion's name lister lists none of the planted names and prints nothing (docs/shell-completion.md).
  for (const kind of ["workloads", "groups", "servers"]) {
    expect(runCli(env, ["__complete", kind])).toEqual({ code: 0, stdout: "", stderr: "" });
  }
});

test("a home that cannot be a folder (a file on its way) gets the command's own one-line error, not 'unexpected error'", () => {
  // Review 8: the state check's lstat threw ENOTDIR before the command could word it.
  const file = join(scratch, "a-file");
  writeFileSync(file, "");
  const line = expectOneLineError(runCli(cliEnv(scratch, join(file, "home")), ["list"]), 1);
  expect(line).not.toContain("unexpected error");
  expect(line).toContain("MCPMGR_HOME");
});
