/**
 * A container create the engine answers only after the supervisor gave its start up (more than
 * its 10 s grace after `rm`): the container is made for a workload that no longer exists, after
 * `rm` removed everything labelled for it. The next mcpmgr command that works with a container
 * workload of this home removes it: containers labelled with this home's installation for a
 * workload this home no longer has, or has stopped (a create answered after `stop`). Another home's (or another user's) containers, and unlabelled
 * ones of an older mcpmgr, are never touched. The engine is the real dockerd, behind a relay that
 * holds each create for longer than the supervisor's grace.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { installId } from "../../src/state/install-id.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { docker, fixtureImages, leftovers, type FixtureImages } from "../support/docker-fixtures.ts";
import { CLI_ENTRY, REPO_ROOT, spawnCollect } from "../support/processes.ts";
import { type SlowEngine, slowEngine } from "../support/slow-engine.ts";

setDefaultTimeout(90_000);

/** Beyond the supervisor's 10 s for a container start cut short (cancelGraceMs), with a margin. */
const CREATE_DELAY_MS = 14_000;

let images: FixtureImages;
let home: string;
let engine: SlowEngine;
const tag = `${process.pid}`;
/** Containers this test made itself (another home's, an older mcpmgr's): removed at the end. */
const planted: string[] = [];
const plantedNetworks: string[] = [];

/** Not spawnSync: the relay lives in this process, and must answer while the command runs. */
function mcpmgr(env: Record<string, string>, ...args: string[]) {
  return spawnCollect([process.execPath, CLI_ENTRY, ...args], {
    ...process.env,
    NO_COLOR: "1",
    MCPMGR_HOME: home,
    MCPMGR_RUNTIME: "docker",
    ...env,
  });
}

async function until(predicate: () => boolean, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate() && Date.now() < deadline) await Bun.sleep(50);
  expect(predicate()).toBe(true);
}

/** A container as mcpmgr labels them, made directly in the engine (never started). */
function plant(workload: string, install: string | undefined): string {
  const labels = ["mcpmgr=true", `mcpmgr.workload=${workload}`, "mcpmgr.role=server"];
  if (install !== undefined) labels.push(`mcpmgr.install=${install}`);
  const made = docker("create", ...labels.flatMap((label) => ["--label", label]), images.probe);
  expect(made.code).toBe(0);
  planted.push(made.out);
  return made.out;
}

const exists = (id: string) => docker("inspect", "--format", "{{.Id}}", id).code === 0;

beforeAll(async () => {
  images = await fixtureImages();
  home = await mkdtemp(join(tmpdir(), "mcpmgr-create-late-"));
  engine = slowEngine(CREATE_DELAY_MS);
}, 300_000);

afterAll(async () => {
  for (const name of [
    `dcl-gone-${tag}`,
    `dcl-next-${tag}`,
    `dcl-here-${tag}`,
    `dcl-stopped-${tag}`,
    `dcl-gw-${tag}`,
    `dcl-after-${tag}`,
  ]) {
    await mcpmgr({}, "rm", name);
    for (const id of leftovers(name).containers) docker("rm", "-f", id);
  }
  for (const id of planted) docker("rm", "-f", id);
  for (const id of plantedNetworks) docker("network", "rm", id);
  engine.close();
  await rm(home, { recursive: true, force: true });
});

/** A background `run` of the probe image whose container create the engine holds: it has reached the engine, not come back. */
async function runHeldAtCreate(name: string): Promise<{ run: Bun.Subprocess; createsBefore: number }> {
  const createsBefore = engine.createsReceived;
  const run = Bun.spawn([process.execPath, CLI_ENTRY, "run", images.probe, "--name", name], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      NO_COLOR: "1",
      MCPMGR_HOME: home,
      MCPMGR_RUNTIME: "docker",
      DOCKER_HOST: engine.endpoint,
    },
    stdout: "ignore",
    stderr: "ignore",
  });
  await until(() => engine.createsReceived > createsBefore || run.exitCode !== null);
  expect(run.exitCode).toBeNull();
  return { run, createsBefore };
}

test("a container made after its workload was removed is removed by this home's next container command, and only this home's", async () => {
  const gone = `dcl-gone-${tag}`;
  const ours = await installId(resolvePaths({ MCPMGR_HOME: home }));
  const { run, createsBefore } = await runHeldAtCreate(gone);
  expect((await mcpmgr({ DOCKER_HOST: engine.endpoint }, "rm", gone)).code).toBe(0);
  expect(await run.exited).toBe(1);
  // The engine makes the container only now: nothing of mcpmgr's waits for it any more.
  await until(() => engine.createsAnswered > createsBefore);
  expect(leftovers(gone).containers).toHaveLength(1);
  // What must stay: another home's container of a workload that home no longer has, and an
  // older mcpmgr's (no installation label), whoever's it is.
  const otherHome = plant(gone, await installId(resolvePaths({ MCPMGR_HOME: join(home, "another-home") })));
  const unlabelled = plant(`dcl-old-${tag}`, undefined);
  // The next container workload of this home (on the engine directly) sweeps it up.
  const next = `dcl-next-${tag}`;
  const started = await mcpmgr({}, "run", images.probe, "--name", next);
  // Its output shown only when it failed.
  expect({ code: started.code, failure: started.code === 0 ? "" : started.stderr }).toEqual({ code: 0, failure: "" });
  expect(
    docker("ps", "-a", "-q", "--filter", `label=mcpmgr.workload=${gone}`, "--filter", `label=mcpmgr.install=${ours}`)
      .out,
  ).toBe("");
  expect(exists(otherHome)).toBe(true);
  expect(exists(unlabelled)).toBe(true);
  // The running workload's own container is not a leftover.
  expect(leftovers(next).containers).toHaveLength(1);
  // rm of a container workload sweeps too: one more container of this home for a workload it has
  // not (as the late create made), and another home's again.
  const later = plant(`dcl-later-${tag}`, ours);
  const removed = await mcpmgr({}, "rm", next);
  expect(removed.code).toBe(0);
  expect(removed.stderr).toContain(`removed the containers left of dcl-later-${tag}`);
  expect(exists(later)).toBe(false);
  expect(exists(otherHome)).toBe(true);
  expect(exists(unlabelled)).toBe(true);
});

test("a running container with this home's install id but no record here (a home at the same path on another machine, one engine) is left running, and its network attached", async () => {
  // The install id is a hash of the state folder's path: another machine's (or dev container's)
  // home at the same path, using this engine, labels its live workloads with it too.
  const ours = await installId(resolvePaths({ MCPMGR_HOME: home }));
  const elsewhere = `dcl-elsewhere-${tag}`;
  const labels = ["mcpmgr=true", `mcpmgr.workload=${elsewhere}`, `mcpmgr.install=${ours}`].flatMap((l) => [
    "--label",
    l,
  ]);
  const network = docker("network", "create", ...labels, `mcpmgr-${elsewhere}.internal`);
  expect(network.code).toBe(0);
  plantedNetworks.push(network.out);
  const made = docker(
    "run",
    "-d",
    "--network",
    network.out,
    ...labels,
    "--label",
    "mcpmgr.role=server",
    "--entrypoint",
    "node",
    images.probe,
    "-e",
    "setInterval(() => {}, 60000)",
  );
  expect(made.code).toBe(0);
  planted.push(made.out);
  const running = () =>
    docker("inspect", "--format", "{{.State.Running}} {{len .NetworkSettings.Networks}}", made.out).out;
  expect(running()).toBe("true 1");
  const here = `dcl-here-${tag}`;
  const started = await mcpmgr({}, "run", images.probe, "--name", here);
  expect({ code: started.code, failure: started.code === 0 ? "" : started.stderr }).toEqual({ code: 0, failure: "" });
  const removed = await mcpmgr({}, "rm", here);
  expect(removed.code).toBe(0);
  expect(removed.stderr).not.toContain(`removed the containers left of ${elsewhere}`);
  expect(running()).toBe("true 1");
});

test("a container made after its workload was stopped is removed by this home's next container command; a running workload's is not", async () => {
  const stopped = `dcl-stopped-${tag}`;
  const ours = await installId(resolvePaths({ MCPMGR_HOME: home }));
  const { run, createsBefore } = await runHeldAtCreate(stopped);
  expect((await mcpmgr({ DOCKER_HOST: engine.endpoint }, "stop", stopped)).code).toBe(0);
  expect(await run.exited).toBe(1);
  // The engine makes the container only now, for a workload recorded as stopped.
  await until(() => engine.createsAnswered > createsBefore);
  const late = leftovers(stopped).containers;
  expect(late).toHaveLength(1);
  expect(docker("inspect", "--format", "{{.State.Status}}", late[0] as string).out).toBe("created");
  // What must stay: a never-started container of a workload that runs (a gateway, recorded and
  // running, stands for one whose start is making its container right now).
  const gateway = `dcl-gw-${tag}`;
  const detached = await mcpmgr({}, "gateway", "default", "--detach", "--name", gateway);
  expect({ code: detached.code, failure: detached.code === 0 ? "" : detached.stderr }).toEqual({
    code: 0,
    failure: "",
  });
  const runningOnes = plant(gateway, ours);
  // The next container workload of this home sweeps the late one up.
  const after = `dcl-after-${tag}`;
  const started = await mcpmgr({}, "run", images.probe, "--name", after);
  expect({ code: started.code, failure: started.code === 0 ? "" : started.stderr }).toEqual({ code: 0, failure: "" });
  expect(exists(late[0] as string)).toBe(false);
  expect(exists(runningOnes)).toBe(true);
  expect((await mcpmgr({}, "logs", after, "--proxy")).stdout).toContain(
    `removed the containers left of ${stopped}, a workload stopped before its engine made them`,
  );
  // The stopped workload itself is left as it was: recorded, stopped.
  const listed = JSON.parse((await mcpmgr({}, "list", "--format", "json")).stdout) as {
    name: string;
    status: string;
  }[];
  expect(listed.find((row) => row.name === stopped)?.status).toBe("stopped");
});
