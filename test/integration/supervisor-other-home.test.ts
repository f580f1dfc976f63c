/**
 * Two mcpmgr homes (MCPMGR_HOME per project) each with a workload `c4`: when home A's status keeps
 * the pid of a supervisor that died (a kill, a reboot) and the kernel hands that pid to home B's
 * `c4` supervisor, home A must not take B's supervisor for its own (state/supervisor-identity.ts).
 * The reuse is made by writing B's supervisor pid into A's status file, which is what it amounts to.
 * A's `list` reports its c4 as not running, and A's `stop`, `start`, `rm` leave B's c4 running.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isProcessAlive } from "../../src/state/process-start.ts";
import { cliEnv, runCli, runCliOk } from "../support/cli-home.ts";

setDefaultTimeout(60_000);

let root: string;
let envA: Record<string, string>;
let envB: Record<string, string>;

const statusPath = (env: Record<string, string>) => join(env.MCPMGR_HOME as string, "state/workloads/c4/status.json");
const supervisorPid = async (env: Record<string, string>) =>
  ((JSON.parse(await readFile(statusPath(env), "utf8")) as { pid?: number }).pid ?? 0) as number;
const listed = (env: Record<string, string>) =>
  (JSON.parse(runCliOk(env, ["list", "--format", "json"]).stdout) as { name: string; status: string }[]).find(
    (row) => row.name === "c4",
  )?.status;

async function until(check: () => boolean): Promise<boolean> {
  for (const deadline = performance.now() + 20_000; performance.now() < deadline; await Bun.sleep(50))
    if (check()) return true;
  return check();
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "mcpmgr-other-home-"));
  envA = cliEnv(root, join(root, "home-a"));
  envB = cliEnv(root, join(root, "home-b"));
  for (const env of [envA, envB]) runCliOk(env, ["run", "npx://./test/fixtures/sandbox-probe", "--name", "c4"]);
});

afterAll(async () => {
  for (const env of [envA, envB]) runCli(env, ["rm", "c4"]);
  await rm(root, { recursive: true, force: true });
});

/** Home A's supervisor dies and its pid comes round to home B's: A's status now names B's supervisor. */
async function plantOtherHomesPid(): Promise<number> {
  const own = await supervisorPid(envA);
  if (isProcessAlive(own)) {
    process.kill(own, "SIGKILL");
    expect(await until(() => !isProcessAlive(own))).toBe(true);
  }
  const theirs = await supervisorPid(envB);
  const status = JSON.parse(await readFile(statusPath(envA), "utf8")) as Record<string, unknown>;
  await writeFile(statusPath(envA), JSON.stringify({ ...status, state: "running", pid: theirs }));
  return theirs;
}

test("home A's list says its c4 is not running, and its stop leaves home B's c4 running", async () => {
  const theirs = await plantOtherHomesPid();
  expect(listed(envA)).toBe("failed");
  // Said as it is: the pid lives on, as another process (here home B's supervisor), not "no longer running".
  const warned = runCliOk(envA, ["list"]).stderr;
  expect(warned).toContain(`c4: its supervisor (pid ${theirs}) is gone; pid ${theirs} now belongs to another process`);
  expect(warned).not.toContain("no longer running");
  runCli(envA, ["stop", "c4"]);
  expect(isProcessAlive(theirs)).toBe(true);
  expect(await supervisorPid(envB)).toBe(theirs);
  expect(listed(envB)).toBe("running");
});

test("home A's start starts its own c4 beside home B's, whose supervisor stays", async () => {
  const theirs = await plantOtherHomesPid();
  runCliOk(envA, ["start", "c4"]);
  const ours = await supervisorPid(envA);
  expect(ours).not.toBe(theirs);
  expect(isProcessAlive(ours)).toBe(true);
  expect(isProcessAlive(theirs)).toBe(true);
  expect(listed(envA)).toBe("running");
  expect(listed(envB)).toBe("running");
});

test("home A's rm removes its c4 and leaves home B's running", async () => {
  const theirs = await plantOtherHomesPid();
  runCliOk(envA, ["rm", "c4"]);
  expect(isProcessAlive(theirs)).toBe(true);
  expect(listed(envB)).toBe("running");
});
