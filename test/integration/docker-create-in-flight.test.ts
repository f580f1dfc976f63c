/**
 * A container workload stopped or removed while the engine is still creating its container: the
 * create answered after the supervisor gave the start up must not leave a container behind. The
 * engine is the real dockerd behind a relay that holds each create for a few seconds (longer than a
 * process start's 3 s grace), as a busy engine does.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { docker, fixtureImages, leftovers, type FixtureImages } from "../support/docker-fixtures.ts";
import { CLI_ENTRY, REPO_ROOT, spawnCollect } from "../support/processes.ts";
import { type SlowEngine, slowEngine } from "../support/slow-engine.ts";

setDefaultTimeout(60_000);

/** Beyond the 3 s a supervisor gave any start before: `stop` swept the labels before the create was made. */
const CREATE_DELAY_MS = 6_000;

let images: FixtureImages;
let home: string;
let engine: SlowEngine;
const names: string[] = [];

/** Not spawnSync: the relay lives in this process, and must answer while the command runs. */
async function mcpmgr(...args: string[]) {
  return spawnCollect([process.execPath, CLI_ENTRY, ...args], environment());
}

function environment() {
  return { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, MCPMGR_RUNTIME: "docker", DOCKER_HOST: engine.endpoint };
}

async function until(predicate: () => boolean, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate() && Date.now() < deadline) await Bun.sleep(50);
  expect(predicate()).toBe(true);
}

beforeAll(async () => {
  images = await fixtureImages();
  home = await mkdtemp(join(tmpdir(), "mcpmgr-create-in-flight-"));
  engine = slowEngine(CREATE_DELAY_MS);
}, 300_000);

afterAll(async () => {
  for (const name of names) {
    await mcpmgr("rm", name);
    for (const id of leftovers(name).containers) docker("rm", "-f", id);
  }
  engine.close();
  await rm(home, { recursive: true, force: true });
});

describe("a container create still under way when the workload is given up", () => {
  test.each(["stop", "rm"])("%s leaves no container behind once the engine answers", async (command) => {
    const name = `dcif-${command}-${process.pid}`;
    names.push(name);
    const createsBefore = engine.createsReceived;
    const run = Bun.spawn([process.execPath, CLI_ENTRY, "run", images.probe, "--name", name], {
      cwd: REPO_ROOT,
      env: environment(),
      stdout: "ignore",
      stderr: "pipe",
    });
    // The supervisor's create has reached the engine, which is still working on it.
    await until(() => engine.createsReceived > createsBefore || run.exitCode !== null);
    expect(run.exitCode).toBeNull();
    expect((await mcpmgr(command, name)).code).toBe(0);
    // The run waiting for the start says it was given up.
    expect(await run.exited).toBe(1);
    expect(await new Response(run.stderr).text()).toMatch(
      new RegExp(`${name} was (stopped|removed) while it was starting`),
    );
    // Once the engine has made the container, nothing of the workload is left in it.
    await until(() => engine.createsAnswered > createsBefore);
    expect(leftovers(name)).toEqual({ containers: [], networks: [] });
  });

  test("Ctrl-C of the run waiting for it leaves no container behind once the engine answers", async () => {
    const name = `dcif-int-${process.pid}`;
    names.push(name);
    const createsBefore = engine.createsReceived;
    const run = Bun.spawn([process.execPath, CLI_ENTRY, "run", images.probe, "--name", name], {
      cwd: REPO_ROOT,
      env: environment(),
      stdout: "ignore",
      stderr: "pipe",
    });
    await until(() => engine.createsReceived > createsBefore || run.exitCode !== null);
    expect(run.exitCode).toBeNull();
    run.kill("SIGINT");
    expect(await run.exited).toBe(130);
    expect(await new Response(run.stderr).text()).toContain("the workload was not kept");
    await until(() => engine.createsAnswered > createsBefore);
    expect(leftovers(name)).toEqual({ containers: [], networks: [] });
  });
});
