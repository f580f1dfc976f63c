/**
 * `restart` of a container workload whose image is no longer on the engine (removed, pruned): the
 * image is pulled before the running workload is stopped, so one that cannot be pulled is refused in
 * one line while the workload goes on running, as any other restart that could not start it again.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { docker, fixtureImages, leftovers } from "../support/docker-fixtures.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

// Real processes and containers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let home: string;
let probe: string;
// A registry nothing listens on: the pull fails at once, offline or not.
const tag = `127.0.0.1:9/mcpmgr-test/restart-gone:${process.pid}`;

function mcpmgr(...args: string[]) {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, MCPMGR_RUNTIME: "docker" },
    timeout: 240_000,
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

beforeAll(async () => {
  probe = (await fixtureImages()).probe;
  home = await mkdtemp(join(tmpdir(), "mcpmgr-restart-image-"));
}, 300_000);

afterAll(async () => {
  mcpmgr("rm", "dr-gone");
  docker("rmi", tag);
  await rm(home, { recursive: true, force: true });
});

const containerId = () => docker("ps", "-q", "--filter", "name=^mcpmgr-dr-gone$").out;

test("restart with the image gone and not pullable: refused in one line, the workload goes on running", () => {
  expect(docker("tag", probe, tag).code).toBe(0);
  const started = mcpmgr("run", tag, "--name", "dr-gone", "--image-verification", "disabled");
  expect(started.code).toBe(0);
  const running = containerId();
  expect(running).not.toBe("");
  expect(docker("rmi", tag).code).toBe(0);

  const restarted = mcpmgr("restart", "dr-gone");
  expect(restarted.code).not.toBe(0);
  expect(restarted.stderr).toContain(`could not pull ${tag}`);
  expect(
    restarted.stderr
      .trim()
      .split("\n")
      .filter((line) => line.startsWith("[error]")),
  ).toHaveLength(1);
  // Not stopped: the same container serves on.
  expect(containerId()).toBe(running);
  const row = (JSON.parse(mcpmgr("list", "--format", "json").stdout) as { name: string; status: string }[]).find(
    (r) => r.name === "dr-gone",
  );
  expect(row?.status).toBe("running");

  // With the image back, the restart goes through.
  expect(docker("tag", probe, tag).code).toBe(0);
  expect(mcpmgr("restart", "dr-gone").code).toBe(0);
  expect(containerId()).not.toBe(running);
  expect(mcpmgr("rm", "dr-gone").code).toBe(0);
  expect(leftovers("dr-gone")).toEqual({ containers: [], networks: [] });
}, 240_000);
