/**
 * `mcpmgr list` (text) says why a failed workload failed: its last error, under the table on
 * stderr (the JSON form has it as `lastError`).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, runCli } from "../support/cli-home.ts";
import { eventually } from "../support/raw-http.ts";

// Real processes: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let home: string;
const mcpmgr = (...args: string[]) => runCli(cliEnv(home), args);

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-list-failed-"));
});

afterAll(() => {
  mcpmgr("rm", "lf");
  mcpmgr("rm", "lk");
  rmSync(home, { recursive: true, force: true });
});

test("a failed workload's last error is printed under the table, naming the workload", () => {
  const tokenFile = join(home, "token");
  writeFileSync(tokenFile, "a-token\n");
  expect(
    mcpmgr("run", "http://127.0.0.1:9/mcp", "--name", "lf", "--remote-auth-bearer-token-file", tokenFile).code,
  ).toBe(0);
  rmSync(tokenFile);
  expect(mcpmgr("restart", "lf").code).not.toBe(0);
  const list = mcpmgr("list");
  expect(list.code).toBe(0);
  expect(list.stdout).toMatch(/^lf\s+failed\s/m);
  expect(list.stdout).not.toContain("cannot read the file");
  expect(list.stderr).toContain(`lf: --remote-auth-bearer-token-file "${tokenFile}": cannot read the file`);
  expect(list.stderr).toContain("mcpmgr logs lf --proxy");
});

test("a workload whose supervisor was killed (as by a reboot) is failed with a way to start it, and 'stop' makes it stopped", async () => {
  expect(mcpmgr("run", "http://127.0.0.1:9/mcp", "--name", "lk").code).toBe(0);
  const statusFile = join(home, ".mcpmgr", "state", "workloads", "lk", "status.json");
  const { pid } = JSON.parse(readFileSync(statusFile, "utf8")) as { pid: number };
  process.kill(pid, "SIGKILL");
  await eventually(() => !isAlive(pid), 10_000, "the supervisor gone");

  const failed = mcpmgr("list");
  expect(failed.stdout).toMatch(/^lk\s+failed\s/m);
  expect(failed.stderr).toContain("lk: the mcpmgr process");
  expect(failed.stderr).toContain("'mcpmgr start lk' runs it again");

  const stop = mcpmgr("stop", "lk");
  expect(stop.code).toBe(0);
  expect(stop.stderr).toContain("lk was not running");
  const stopped = mcpmgr("list");
  expect(stopped.stdout).toMatch(/^lk\s+stopped\s/m);
  expect(stopped.stderr).not.toContain("lk:");
  expect(mcpmgr("rm", "lk").code).toBe(0);
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
