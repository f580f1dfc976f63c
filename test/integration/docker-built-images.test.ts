/**
 * mcpmgr's own package images do not pile up: a start removes the build its package's previous change
 * left (docker-build.test.ts), and `rm` (or `group rm --with-workloads`) of a container workload from a
 * package removes the images built for it; but nothing while another workload of this home is from the
 * same package (its next start may want them) or another foreground run is live, never another
 * installation's, and never one a container still uses. Real Docker, on the offline base image.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { docker, fixtureImages, runInDocker } from "../support/docker-fixtures.ts";
import { heldImageList } from "../support/held-image-list.ts";
import { NODE_BASE_IMAGE } from "../support/docker-images.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

let scratch: string;

beforeAll(async () => {
  await fixtureImages();
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-built-images-"));
}, 300_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** A private copy of the probe project, so its build repository is this test's alone. */
async function project(label: string): Promise<{ dir: string; repository: string }> {
  const dir = join(scratch, `${label}-${process.pid}`);
  await cp(join(REPO_ROOT, "test/fixtures/sandbox-probe"), dir, { recursive: true });
  return { dir, repository: `mcpmgr-build/npx-${label}-${process.pid}` };
}

function tags(repository: string): string[] {
  const out = docker("images", "--format", "{{.Repository}}:{{.Tag}}", repository).out;
  return out ? out.split("\n").sort() : [];
}

function mcpmgr(...args: string[]): { code: number; err: string } {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, MCPMGR_RUNTIME: "docker", NO_COLOR: "1" },
    stdin: "ignore",
    timeout: 240_000,
  });
  return { code: result.exitCode, err: result.stderr.toString() };
}

/** mcpmgr with `env`, killed after `timeout` ms; this process's event loop runs meanwhile (the relay is served by it). */
async function mcpmgrAsync(env: Record<string, string>, timeout: number, ...args: string[]) {
  const proc = Bun.spawn([process.execPath, CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, MCPMGR_RUNTIME: "docker", NO_COLOR: "1", ...env },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
    timeout,
  });
  const err = await new Response(proc.stderr).text();
  return { code: await proc.exited, err };
}

/** A foreground run, stopped once its clean-up of built images is done (the start does not wait for it). */
async function runOnce(args: string[]): Promise<void> {
  const run = await runInDocker([...args, "--debug"]);
  try {
    const deadline = Date.now() + 60_000;
    while (!/built images of \S+: /.test(run.output()) && Date.now() < deadline) await Bun.sleep(100);
    expect(run.output()).toMatch(/built images of \S+: /);
  } finally {
    await run.client.close();
    await run.stop();
  }
}

test("another workload of this home from the same package keeps the earlier build until it is gone", async () => {
  const { dir, repository } = await project("shared");
  const args = [`npx://${dir}`, "--name", "built-shared", "--runtime-image", NODE_BASE_IMAGE];
  // A stopped workload of the same package: its next start may run the build this one replaces.
  const store = new WorkloadStore(resolvePaths(process.env));
  await store.create({
    name: "built-shared-other",
    source: { kind: "package", ref: `npx://${dir}` },
    transport: "stdio",
    proxyPort: 9,
    runtime: "docker",
  });
  try {
    await runOnce(args);
    const [first] = tags(repository);
    await writeFile(join(dir, "extra.txt"), "changed");
    await runOnce(args);
    expect(tags(repository)).toHaveLength(2);
    expect(tags(repository)).toContain(first as string);
    await store.remove("built-shared-other");
    // The next start (from its cached image) finds no one else from the package: the earlier build goes.
    await runOnce(args);
    expect(tags(repository)).toHaveLength(1);
    expect(tags(repository)).not.toContain(first as string);
  } finally {
    await store.remove("built-shared-other").catch(() => {});
    for (const tag of tags(repository)) docker("rmi", "-f", tag);
  }
}, 600_000);

test("rm removes its package's images, never another installation's", async () => {
  const { dir, repository } = await project("removed");
  // Another installation's build in the same repository (its label says so): never this one's to remove.
  const foreign = `${repository}:other-installation`;
  const context = join(scratch, "foreign-context");
  await cp(join(REPO_ROOT, "test/fixtures/sandbox-probe"), context, { recursive: true });
  await writeFile(join(context, "Dockerfile"), `FROM ${NODE_BASE_IMAGE}\n`);
  const labels = ["mcpmgr=true", "mcpmgr.role=build", "mcpmgr.install=another-installation"];
  expect(docker("build", "-q", ...labels.flatMap((label) => ["--label", label]), "-t", foreign, context).code).toBe(0);
  try {
    const started = mcpmgr("run", `npx://${dir}`, "--name", "built-removed", "--runtime-image", NODE_BASE_IMAGE);
    expect(started.code).toBe(0);
    const ours = tags(repository).filter((tag) => tag !== foreign);
    expect(ours).toHaveLength(1);
    const removed = mcpmgr("rm", "built-removed");
    expect(removed.code).toBe(0);
    expect(tags(repository)).toEqual([foreign]);
  } finally {
    mcpmgr("rm", "built-removed");
    for (const tag of tags(repository)) docker("rmi", "-f", tag);
  }
}, 600_000);

test("group rm --with-workloads removes its workloads' package images as rm does", async () => {
  const { dir, repository } = await project("grouped");
  const group = `built-images-${process.pid}`;
  try {
    expect(mcpmgr("group", "create", group).code).toBe(0);
    const args = ["--runtime-image", NODE_BASE_IMAGE, "--group", group];
    expect(mcpmgr("run", `npx://${dir}`, "--name", "built-grouped", ...args).code).toBe(0);
    expect(tags(repository)).toHaveLength(1);
    expect(mcpmgr("group", "rm", group, "--with-workloads").code).toBe(0);
    expect(tags(repository)).toEqual([]);
  } finally {
    mcpmgr("group", "rm", group, "--with-workloads");
    for (const tag of tags(repository)) docker("rmi", "-f", tag);
  }
}, 600_000);

test("another foreground run of this home, live, keeps the earlier build: its package is not recorded", async () => {
  const { dir, repository } = await project("beside");
  const args = [`npx://${dir}`, "--name", "built-beside", "--runtime-image", NODE_BASE_IMAGE];
  const images = await fixtureImages();
  const other = await runInDocker([images.probe, "--name", "built-beside-other"]);
  try {
    await runOnce(args);
    const [first] = tags(repository);
    await writeFile(join(dir, "extra.txt"), "changed");
    await runOnce(args);
    expect(tags(repository)).toContain(first as string);
    expect(tags(repository)).toHaveLength(2);
    await other.client.close();
    await other.stop();
    await runOnce(args);
    expect(tags(repository)).toHaveLength(1);
  } finally {
    await other.stop();
    for (const tag of tags(repository)) docker("rmi", "-f", tag);
  }
}, 600_000);

test("a start does not wait for the clean-up of built images: the workload is ready while it is held", async () => {
  const { dir, repository } = await project("ready");
  const engine = heldImageList();
  const env = { DOCKER_HOST: engine.endpoint };
  try {
    // Held for good until released: a start that waited for it would never be ready (killed after 90 s).
    const started = await mcpmgrAsync(
      env,
      90_000,
      "run",
      `npx://${dir}`,
      "--name",
      "built-ready",
      "--runtime-image",
      NODE_BASE_IMAGE,
    );
    expect(started.err).not.toContain("error");
    expect(started.code).toBe(0);
    // The clean-up did start (it is what is held), after the container.
    const deadline = Date.now() + 30_000;
    while (engine.held === 0 && Date.now() < deadline) await Bun.sleep(100);
    expect(engine.held).toBeGreaterThan(0);
  } finally {
    engine.release();
    await mcpmgrAsync(env, 240_000, "rm", "built-ready");
    engine.close();
    for (const tag of tags(repository)) docker("rmi", "-f", tag);
  }
}, 600_000);
