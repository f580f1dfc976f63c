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

async function runOnce(args: string[]): Promise<void> {
  const run = await runInDocker(args);
  await run.client.close();
  await run.stop();
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
