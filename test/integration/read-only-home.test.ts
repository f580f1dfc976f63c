/**
 * MCPMGR_HOME's state folder made read-only (a read-only bind mount over it: root only, as CI
 * runs): a command that must take a lock there refuses in one line naming the read-only
 * filesystem, not an "unexpected error" about the lock's temporary file it never created; `stop`
 * of a running workload stops it and says that its status could not be recorded; `restart` is
 * refused before it stops it (its start could not record itself).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli, runCliOk } from "../support/cli-home.ts";
import { isSupervisorOf } from "../../src/state/supervisor-identity.ts";
import { installClients } from "../support/client-home.ts";

// A real workload is run and stopped first: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let root: string;
let env: Record<string, string>;
let state: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "mcpmgr-read-only-"));
  const home = join(root, "mcpmgr");
  state = join(home, "state");
  await mkdir(home);
  env = cliEnv(root, home);
  installClients(root, env, ["claude-code"]);
  runCliOk(env, ["run", "npx://./test/fixtures/sandbox-probe", "--name", "kept"]);
  for (const argv of [
    ["mount", "--bind", state, state],
    ["mount", "-o", "remount,bind,ro", state],
  ]) {
    const done = Bun.spawnSync(argv);
    if (done.exitCode !== 0) throw new Error(`a read-only bind mount (root only) is needed: ${done.stderr.toString()}`);
  }
});

afterAll(async () => {
  Bun.spawnSync(["umount", state]);
  runCli(env, ["rm", "kept"]);
  await rm(root, { recursive: true, force: true });
});

test("restart while the state folder is read-only is refused before it stops anything: the workload goes on running", async () => {
  const before = (await Bun.file(join(state, "workloads/kept/status.json")).json()) as { pid: number };
  const line = expectOneLineError(runCli(env, ["restart", "kept"]), 1);
  expect(line).toContain("cannot create the lock file");
  expect(line).toContain(
    "(hint: the filesystem is read-only; point MCPMGR_HOME at a writable folder; kept was not restarted and goes on running)",
  );
  // Its supervisor is the one it had, still running it, and `list` says so.
  expect(isSupervisorOf(before.pid, "kept", { logDir: join(state, "logs") })).toBe(true);
  const rows = JSON.parse(runCliOk(env, ["list", "--format", "json"]).stdout) as { name: string; status: string }[];
  expect(rows.find((row) => row.name === "kept")?.status).toBe("running");
});

test("stop while the state folder is read-only stops the workload and says its status cannot be recorded", () => {
  const stopped = runCli(env, ["stop", "kept"]);
  expect(stopped.code).toBe(0);
  expect(stopped.stderr).toContain("kept is stopped, but that cannot be recorded: cannot create the lock file");
  expect(stopped.stderr).toContain("(hint: the filesystem is read-only; point MCPMGR_HOME at a writable folder)");
  expect(stopped.stderr).toContain("'mcpmgr stop kept' records it once it can be written");
  expect(stopped.stderr).toContain("stopped kept");
});

test("rm, start and client register on a read-only state folder: one line naming it, with a hint", () => {
  const refusals = [
    expectOneLineError(runCli(env, ["rm", "kept"]), 1),
    expectOneLineError(runCli(env, ["start", "kept"]), 1),
  ];
  refusals.push(expectOneLineError(runCli(env, ["client", "register", "claude-code"]), 1));
  for (const line of refusals) {
    expect(line).toContain("cannot create the lock file");
    expect(line).toContain("read-only file system");
    expect(line).toContain("hint: the filesystem is read-only; point MCPMGR_HOME at a writable folder");
  }
});
