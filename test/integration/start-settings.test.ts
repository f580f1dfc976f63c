/**
 * `start` and `restart` with a bad setting in the environment (MCPMGR_REQUEST_TIMEOUT and the
 * like, which the supervisor reads as it starts): refused in one line before anything changes,
 * as `run` refuses it. `restart` used to stop the running workload first and leave it failed.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli } from "../support/cli-home.ts";
import { CLI_ENTRY, isAlive, REPO_ROOT } from "../support/processes.ts";
import { assertStartSettings, startSettings } from "../../src/workload/limits.ts";

// Real processes: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let home: string;
const mcpmgr = (args: string[], extra: Record<string, string> = {}) => runCli({ ...cliEnv(home), ...extra }, args);

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-start-settings-"));
});

afterAll(() => {
  mcpmgr(["rm", "ss"]);
  mcpmgr(["rm", "sr"]);
  mcpmgr(["rm", "sf"]);
  mcpmgr(["rm", "gateway-sg"]);
  mcpmgr(["rm", "sl"]);
  mcpmgr(["rm", "sq"]);
  mcpmgr(["group", "rm", "sg"]);
  mcpmgr(["group", "rm", "sd"]);
  rmSync(home, { recursive: true, force: true });
});

const statusOf = (name = "ss") =>
  JSON.parse(readFileSync(join(home, ".mcpmgr", "state", "workloads", name, "status.json"), "utf8")) as {
    state: string;
    pid?: number;
  };

test("restart with a bad setting leaves the running workload running; start leaves a stopped one stopped", () => {
  // A remote workload: its supervisor serves the proxy whether or not the remote answers.
  expect(mcpmgr(["run", "http://127.0.0.1:9/mcp", "--name", "ss"]).code).toBe(0);
  const running = statusOf();
  expect(running.state).toBe("running");

  const bad = { MCPMGR_REQUEST_TIMEOUT: "abc" };
  const restart = expectOneLineError(mcpmgr(["restart", "ss"], bad), 2);
  expect(restart).toContain('MCPMGR_REQUEST_TIMEOUT "abc": must be a duration');
  expect(statusOf()).toMatchObject({ state: "running", pid: running.pid });
  expect(isAlive(running.pid as number)).toBe(true);

  expect(mcpmgr(["stop", "ss"]).code).toBe(0);
  // Stopped, a refused restart starts nothing, and says so (not that it goes on running).
  expect(expectOneLineError(mcpmgr(["restart", "ss"], bad), 2)).toEndWith("; nothing was started)");
  const start = expectOneLineError(mcpmgr(["start", "ss"], { MCPMGR_MAX_LOG_BYTES: "1e9" }), 2);
  expect(start).toContain('MCPMGR_MAX_LOG_BYTES "1e9"');
  expect(statusOf().state).toBe("stopped");
  // A workload that runs already needs none of them: start says so, as before.
  expect(mcpmgr(["start", "ss"]).code).toBe(0);
  expect(mcpmgr(["start", "ss"], bad).stderr).toContain("ss is already running");
});

test("restart refused while the workload is still starting says its start goes on, not that it runs", async () => {
  // A server that never answers initialize: its first start waits minutes, in the "starting" state.
  const run = Bun.spawn([process.execPath, CLI_ENTRY, "run", "npx://./test/fixtures/never-answers", "--name", "sq"], {
    cwd: REPO_ROOT,
    env: cliEnv(home),
    stdout: "ignore",
    stderr: "ignore",
  });
  try {
    const path = join(home, ".mcpmgr", "state", "workloads", "sq", "status.json");
    const deadline = Date.now() + 30_000;
    while (!(existsSync(path) && statusOf("sq").state === "starting" && statusOf("sq").pid !== undefined)) {
      if (Date.now() > deadline) throw new Error("sq never reached the starting state");
      await Bun.sleep(100);
    }
    const line = expectOneLineError(mcpmgr(["restart", "sq"], { MCPMGR_REQUEST_TIMEOUT: "abc" }), 2);
    expect(line).toEndWith("; sq was not restarted; the start under way goes on)");
    expect(statusOf("sq").state).toBe("starting");
  } finally {
    // Ctrl-C gives the first start up: nothing is kept.
    run.kill("SIGINT");
    await run.exited;
  }
});

// "abc" is not a duration, a number or a size: bad for every setting.
const badValue = "abc";

test("every setting the supervisor reads is refused by start before it starts anything", () => {
  expect(mcpmgr(["run", "http://127.0.0.1:9/mcp", "--name", "sl"]).code).toBe(0);
  expect(mcpmgr(["stop", "sl"]).code).toBe(0);
  const checked = startSettings.filter((each) => each.runtimes === undefined);
  expect(checked.length).toBeGreaterThan(0);
  for (const each of checked) {
    const line = expectOneLineError(mcpmgr(["start", "sl"], { [each.name]: badValue }), 2);
    expect(line).toContain(`${each.name} "${badValue}"`);
    expect(statusOf("sl").state).toBe("stopped");
  }
  // The container engines' own: refused for their runtimes only (read by container placement).
  for (const each of startSettings.filter((setting) => setting.runtimes !== undefined)) {
    for (const runtime of each.runtimes ?? []) {
      expect(() => assertStartSettings({ [each.name]: badValue }, runtime)).toThrow(`${each.name} "${badValue}"`);
    }
    expect(() => assertStartSettings({ [each.name]: badValue }, "remote")).not.toThrow();
  }
});

test("gateway --detach with a bad setting is refused in one line, before it is recorded, as run is", () => {
  expect(mcpmgr(["group", "create", "sd"]).code).toBe(0);
  for (const each of startSettings.filter((setting) => setting.runtimes === undefined)) {
    const line = expectOneLineError(mcpmgr(["gateway", "sd", "--detach"], { [each.name]: badValue }), 2);
    expect(line).toContain(`${each.name} "${badValue}"`);
    expect(mcpmgr(["list", "--all"]).stdout).not.toContain("gateway-sd");
  }
  // The cap the review found ignored (the proxy log then uncapped): a number, but not a whole one.
  const line = expectOneLineError(mcpmgr(["gateway", "sd", "--detach"], { MCPMGR_MAX_LOG_BYTES: "1e9" }), 2);
  expect(line).toContain('MCPMGR_MAX_LOG_BYTES "1e9"');
  // In the foreground too, before it serves.
  expect(expectOneLineError(mcpmgr(["gateway", "sd"], { MCPMGR_REQUEST_TIMEOUT: badValue }), 2)).toContain(
    `MCPMGR_REQUEST_TIMEOUT "${badValue}"`,
  );
});

test("restart of a workload whose secret its next start could not have leaves it running", () => {
  const password = { MCPMGR_SECRETS_PASSWORD: "start-settings" };
  const set = Bun.spawnSync([process.execPath, CLI_ENTRY, "secret", "set", "sr-token"], {
    env: { ...cliEnv(home), ...password },
    stdin: Buffer.from("a-token"),
  });
  expect(set.exitCode).toBe(0);
  const run = ["run", "http://127.0.0.1:9/mcp", "--name", "sr", "--remote-forward-headers-secret", "X-Key=sr-token"];
  expect(mcpmgr(run, password).code).toBe(0);
  const running = statusOf("sr");
  expect(running.state).toBe("running");

  // From a shell without the password (a cron job, another terminal):
  const noPassword = expectOneLineError(mcpmgr(["restart", "sr"]), 1);
  expect(noPassword).toContain("no password for the encrypted secrets file");
  // Said, not only true: the error alone read as if the workload were down now.
  expect(noPassword).toEndWith("; sr was not restarted and goes on running)");
  expect(statusOf("sr")).toMatchObject({ state: "running", pid: running.pid });

  // Deleted anyway (secret delete --force warns that sr still uses it):
  expect(mcpmgr(["secret", "delete", "sr-token", "--force"], password).code).toBe(0);
  const missing = expectOneLineError(mcpmgr(["restart", "sr"], password), 1);
  expect(missing).toContain("--remote-forward-headers-secret X-Key=sr-token");
  expect(missing).toContain("sr-token");
  expect(statusOf("sr")).toMatchObject({ state: "running", pid: running.pid });
  expect(isAlive(running.pid as number)).toBe(true);
});

test("restart of a workload whose token file is gone leaves it running, with the option that names the file", () => {
  const tokenFile = join(home, "token");
  writeFileSync(tokenFile, "a-token\n");
  // Named by a relative path: the check reads it from the workload's working directory, as its supervisor would.
  const run = ["run", "http://127.0.0.1:9/mcp", "--name", "sf", "--remote-auth-bearer-token-file", "token"];
  expect(runCliIn(home, run).code).toBe(0);
  const running = statusOf("sf");
  expect(running.state).toBe("running");
  expect(mcpmgr(["restart", "sf"]).code).toBe(0);
  const restarted = statusOf("sf");
  rmSync(tokenFile);
  const line = expectOneLineError(mcpmgr(["restart", "sf"]), 2);
  expect(line).toContain('--remote-auth-bearer-token-file "token": cannot read the file');
  expect(statusOf("sf")).toMatchObject({ state: "running", pid: restarted.pid });
  expect(isAlive(restarted.pid as number)).toBe(true);
});

test("restart from another directory, or from one removed since, reads a gateway's files where it was created", () => {
  const project = join(home, "gateway-project");
  const elsewhere = join(home, "elsewhere");
  const removed = join(home, "removed");
  for (const dir of [project, elsewhere, removed]) mkdirSync(dir);
  writeFileSync(join(project, "audit.json"), '{"enabled": true}\n');
  expect(mcpmgr(["group", "create", "sg"]).code).toBe(0);
  // A relative path, taken from the directory the gateway was created in, as its supervisor takes it.
  expect(runCliIn(project, ["gateway", "sg", "--detach", "--audit-config", "audit.json"]).code).toBe(0);
  const first = statusOf("gateway-sg");
  expect(first.state).toBe("running");
  const fromElsewhere = runCliIn(elsewhere, ["restart", "gateway-sg"]);
  expect(`${fromElsewhere.code} ${fromElsewhere.stderr}`).toStartWith("0 ");
  const second = statusOf("gateway-sg");
  expect(second).toMatchObject({ state: "running" });
  expect(second.pid).not.toBe(first.pid);
  // A shell still in a directory removed since (its process has no current directory).
  const shell = Bun.spawnSync(
    [
      "sh",
      "-c",
      'cd "$1" && rmdir "$1" && exec "$2" "$3" restart gateway-sg',
      "sh",
      removed,
      process.execPath,
      CLI_ENTRY,
    ],
    { env: cliEnv(home), stdin: "ignore" },
  );
  expect(`${shell.exitCode} ${shell.stderr.toString()}`).toStartWith("0 ");
  expect(statusOf("gateway-sg").pid).not.toBe(second.pid);
  // A file that is gone is still refused, the gateway left running.
  rmSync(join(project, "audit.json"));
  expect(expectOneLineError(runCliIn(elsewhere, ["restart", "gateway-sg"]), 2)).toContain(
    '--audit-config "audit.json"',
  );
  expect(statusOf("gateway-sg").state).toBe("running");
});

/** runCli from `cwd` instead of the repository. */
function runCliIn(cwd: string, args: string[]) {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], { cwd, env: cliEnv(home), stdin: "ignore" });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}
