/**
 * Ctrl-C during `start --all`: the workloads under way are finished (each says its line), no more
 * are begun, and the command ends saying which were not started (CANCELLED, exit 130). Nothing is
 * left on its way up with nobody having said so. Real background workloads of the sandbox-probe
 * fixture in the process sandbox, more of them than a batch starts at once.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv } from "../support/cli-home.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

// Real supervisors and servers, several per command.
setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
// More than the most a batch starts at once (four): some are still waiting their turn at the signal.
const NAMES = ["aa", "bb", "cc", "dd", "ee", "ff"];
let dir: string;

function mcpmgr(...args: string[]) {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env: cliEnv(dir),
    stdin: "ignore",
    timeout: 120_000,
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

const states = () =>
  Object.fromEntries(
    (JSON.parse(mcpmgr("list", "--format", "json").stdout) as { name: string; status: string }[]).map((row) => [
      row.name,
      row.status,
    ]),
  );

/**
 * Whether some workload's supervisor was spawned (its status names a pid of its own, not only the
 * command that stopped it, `stoppedBy`): the batch is under way.
 */
const someSpawned = () =>
  NAMES.some((name) => {
    const file = join(dir, ".mcpmgr", "state/workloads", name, "status.json");
    // Replaced whole by a rename (state/atomic-file.ts): never read half-written.
    return existsSync(file) && typeof (JSON.parse(readFileSync(file, "utf8")) as { pid?: unknown }).pid === "number";
  });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-batch-int-"));
  for (const name of NAMES) {
    const run = mcpmgr("run", PROBE, "--name", name);
    expect([name, run.code, run.code === 0 ? "" : run.stderr]).toEqual([name, 0, ""]);
  }
  expect(mcpmgr("stop", "--all").code).toBe(0);
}, 180_000);

afterAll(async () => {
  mcpmgr("rm", "--all");
  await rm(dir, { recursive: true, force: true });
});

test("Ctrl-C during start --all: those under way finish, no more begin, the end names those not started", async () => {
  const child = Bun.spawn([process.execPath, CLI_ENTRY, "start", "--all"], {
    cwd: REPO_ROOT,
    env: cliEnv(dir),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  while (!someSpawned() && child.exitCode === null) await Bun.sleep(10);
  child.kill("SIGINT");
  const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()]);
  expect([code, child.signalCode]).toEqual([130, null]);
  const started = NAMES.filter((name) => stderr.includes(`[info] started ${name} at http://`));
  const notStarted = /\[error\] SIGINT: cancelled; not started: ([a-z, ]+) \(hint: /.exec(stderr)?.[1]?.split(", ");
  expect(notStarted).toBeArray();
  expect(notStarted?.length).toBeGreaterThan(0);
  // Every workload is one or the other, and is where its line says: none left starting unsaid.
  expect([...started, ...(notStarted ?? [])].sort()).toEqual(NAMES);
  const now = states();
  for (const name of NAMES) expect([name, now[name]]).toEqual([name, started.includes(name) ? "running" : "stopped"]);
});
