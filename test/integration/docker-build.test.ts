/**
 * Protocol-scheme packages in containers: an image generated and built for npx:// and
 * go:// local projects (on the offline base images via --runtime-image), reused by
 * content on the next run, rebuilt when the project changes (the earlier build removed), with build options checked.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { docker, fixtureImages, runInDocker, runInDockerFails as runFails } from "../support/docker-fixtures.ts";
import { GO_BASE_IMAGE, NODE_BASE_IMAGE } from "../support/docker-images.ts";
import { CLI_ENTRY, REPO_ROOT, spawnUntil } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

/** Like runInDocker, with call() giving the tool's text only. */
async function runForeground(args: string[]) {
  const run = await runInDocker(args);
  return {
    ...run,
    call: async (name: string, args: Record<string, unknown> = {}) => (await run.call(name, args)).text,
  };
}
let scratch: string;
let probeDir: string;

beforeAll(async () => {
  await fixtureImages();
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-docker-build-"));
  // A private copy: the test edits it to check the cache key follows the content.
  probeDir = join(scratch, `probe-${process.pid}`);
  await cp(join(REPO_ROOT, "test/fixtures/sandbox-probe"), probeDir, { recursive: true });
}, 300_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

function builtImages(slug: string): string[] {
  const out = docker("images", "--format", "{{.Repository}}:{{.Tag}}", `mcpmgr-build/${slug}`).out;
  return out ? out.split("\n") : [];
}

test("npx:// local project: built once as a non-root image, cached by content, rebuilt on change", async () => {
  const slug = `npx-probe-${process.pid}`;
  const args = [`npx://${probeDir}`, "--name", "docker-npx", "--runtime-image", NODE_BASE_IMAGE];
  const first = await runForeground(args);
  try {
    expect(await first.call("env", { name: "HOME" })).toBe("/home/mcp");
    await first.client.close();
  } finally {
    await first.stop();
  }
  expect(first.output()).toContain("building mcpmgr-build/");
  expect(first.output()).toContain("Step 1/");
  const images = builtImages(slug);
  expect(images.length).toBe(1);
  const user = docker("image", "inspect", images[0] as string, "--format", "{{.Config.User}}").out;
  expect(user).toBe("10001:10001");

  const second = await runForeground(args);
  await second.client.close();
  await second.stop();
  expect(second.output()).not.toContain("building mcpmgr-build/");
  expect(builtImages(slug)).toEqual(images);
  // A cache hit still checks the base images: built under warn, the image is not let
  // through unchecked when the next run asks for verification.
  expect(second.output()).toContain(`base image: image verification: ${NODE_BASE_IMAGE} is not pinned by digest`);
  const enforced = await runFails([...args, "--image-verification", "enabled"]);
  expect(enforced.code).toBe(1);
  expect(enforced.err).toContain(`image verification failed: ${NODE_BASE_IMAGE} is not pinned by digest`);
  expect(enforced.err + enforced.out).not.toContain("building mcpmgr-build/");

  await writeFile(join(probeDir, "extra.txt"), "changed");
  // --debug: the start does not wait for its clean-up of the earlier build, which says when it is done.
  const third = await runForeground([...args, "--debug"]);
  const deadline = Date.now() + 60_000;
  while (!third.output().includes(`built images of mcpmgr-build/${slug}: `) && Date.now() < deadline)
    await Bun.sleep(100);
  await third.client.close();
  await third.stop();
  expect(third.output()).toContain("building mcpmgr-build/");
  // The build it replaced is gone: each change of the project used to leave one more image behind for good.
  const rebuilt = builtImages(slug);
  expect(rebuilt.length).toBe(1);
  expect(rebuilt).not.toEqual(images);
  for (const tag of builtImages(slug)) docker("rmi", "-f", tag);
}, 600_000);

/** The image that ended the builder stage, read from the build output: the last `---> ID` before the second FROM. */
function builderStageImage(output: string): string | undefined {
  let last: string | undefined;
  for (const line of output.split("\n")) {
    if (/Step (\d+)\/\d+ : FROM /.test(line) && !/Step 1\//.test(line)) return last;
    last = /---> ([0-9a-f]{12})\s*$/.exec(line)?.[1] ?? last;
  }
  return undefined;
}

test("a build leaves no builder-stage image behind, and a rebuild after docker rmi runs every step again", async () => {
  // docs/containers.md: "pin a version or docker rmi the tag to refresh it". With the engine's
  // layer cache, the rebuild took the old npm install layer from the builder stage the first
  // build had left behind (an untagged image, kept for good): nothing was refreshed.
  const dir = join(scratch, `stage-${process.pid}`);
  await cp(join(REPO_ROOT, "test/fixtures/sandbox-probe"), dir, { recursive: true });
  const args = [`npx://${dir}`, "--name", "docker-stage", "--runtime-image", NODE_BASE_IMAGE];
  const first = await runForeground(args);
  await first.client.close();
  await first.stop();
  const stage = builderStageImage(first.output());
  expect(stage).toBeDefined();
  expect(docker("image", "inspect", stage as string).code).not.toBe(0);
  const [tag] = builtImages(`npx-stage-${process.pid}`);
  expect(docker("rmi", tag as string).code).toBe(0);
  const second = await runForeground(args);
  await second.client.close();
  await second.stop();
  expect(second.output()).toContain("building mcpmgr-build/");
  expect(second.output()).not.toContain("Using cache");
  for (const built of builtImages(`npx-stage-${process.pid}`)) docker("rmi", "-f", built);
}, 600_000);

test("two runs of the same package at once build its image once: the second waits and takes the first's", async () => {
  // Builds skip the layer cache: two at once made two images, the tag moved to the second's and the
  // first's was left untagged (under the first run's container).
  const dir = join(scratch, `twice-${process.pid}`);
  await cp(join(REPO_ROOT, "test/fixtures/sandbox-probe"), dir, { recursive: true });
  const slug = `npx-twice-${process.pid}`;
  const runs = await Promise.all(
    ["docker-twice-a", "docker-twice-b"].map((name) =>
      runForeground([`npx://${dir}`, "--name", name, "--runtime-image", NODE_BASE_IMAGE]),
    ),
  );
  try {
    for (const run of runs) expect(await run.call("env", { name: "HOME" })).toBe("/home/mcp");
    const built = runs.filter((run) => run.output().includes("building mcpmgr-build/"));
    expect(built.length).toBe(1);
    const images = builtImages(slug);
    expect(images.length).toBe(1);
    // Both containers run the one tagged image: none was left untagged under a container.
    const id = docker("image", "inspect", images[0] as string, "--format", "{{.Id}}").out;
    for (const name of ["docker-twice-a", "docker-twice-b"]) {
      const containers = docker(
        "ps",
        "-q",
        "--filter",
        "label=mcpmgr=true",
        "--filter",
        `label=mcpmgr.workload=${name}`,
      );
      const [container] = containers.out.split("\n");
      expect(docker("inspect", container as string, "--format", "{{.Image}}").out).toBe(id);
    }
  } finally {
    for (const run of runs) {
      await run.client.close();
      await run.stop();
    }
    for (const image of builtImages(slug)) docker("rmi", "-f", image);
  }
}, 600_000);

test("Ctrl-C ends a run waiting for another run's build of the same image at once, keeping nothing", async () => {
  // The wait for the build lock took no signal: the run waited until the other build ended (or 30 min).
  const dir = join(scratch, `cancel-${process.pid}`);
  await cp(join(REPO_ROOT, "test/fixtures/sandbox-probe"), dir, { recursive: true });
  const slug = `npx-cancel-${process.pid}`;
  const env = { MCPMGR_RUNTIME: "docker" };
  const args = [`npx://${dir}`, "--runtime-image", NODE_BASE_IMAGE];
  // The first run holds the lock while it builds; stopped (SIGSTOP) there, it holds it for as long as the test needs.
  const first = await spawnUntil(
    [process.execPath, CLI_ENTRY, "run", "--foreground", ...args, "--name", "docker-cancel-a"],
    /building mcpmgr-build\//,
    { env, timeoutMs: 240_000 },
  );
  first.proc.kill("SIGSTOP");
  try {
    const second = await spawnUntil(
      [process.execPath, CLI_ENTRY, "run", ...args, "--name", "docker-cancel-b"],
      /waiting for another mcpmgr build of mcpmgr-build\/\S+…/,
      { env, timeoutMs: 120_000 },
    );
    const asked = Date.now();
    const code = await second.stop("SIGINT");
    expect(code).toBe(130);
    expect(Date.now() - asked).toBeLessThan(10_000);
    expect(second.output()).toContain(
      "SIGINT: stopped docker-cancel-b while it was starting; the workload was not kept",
    );
    expect(second.output()).not.toContain("STATE_LOCKED");
    // Nothing recorded and no container: the run had got no further than the wait.
    const list = Bun.spawnSync([process.execPath, CLI_ENTRY, "list"], { env: { ...process.env, ...env } });
    expect(list.stdout.toString()).not.toContain("docker-cancel-b");
    expect(docker("ps", "-aq", "--filter", "label=mcpmgr.workload=docker-cancel-b").out).toBe("");
  } finally {
    first.proc.kill("SIGCONT");
    await first.stop("SIGINT");
    for (const image of builtImages(slug)) docker("rmi", "-f", image);
  }
}, 600_000);

test("go:// local project builds with the Go toolchain image and runs the binary", async () => {
  const goDir = join(scratch, `go-echo-${process.pid}`);
  await cp(join(REPO_ROOT, "test/fixtures/go-echo"), goDir, { recursive: true });
  const run = await runForeground([`go://${goDir}`, "--name", "docker-go", "--runtime-image", GO_BASE_IMAGE]);
  try {
    const { tools } = await run.client.listTools();
    expect(tools.length).toBeGreaterThan(0);
    await run.client.close();
  } finally {
    await run.stop();
  }
  expect(run.output()).toContain("go build");
  for (const tag of builtImages(`go-go-echo-${process.pid}`)) docker("rmi", "-f", tag);
}, 600_000);

test("with --image-verification enabled, the build's base images must be pinned by digest too", async () => {
  const unpinnedBase = await runFails([
    `npx://${probeDir}`,
    "--runtime-image",
    NODE_BASE_IMAGE,
    "--image-verification",
    "enabled",
  ]);
  expect(unpinnedBase.code).toBe(1);
  expect(unpinnedBase.err).toContain(`image verification failed: ${NODE_BASE_IMAGE} is not pinned by digest`);
});

test("a base image that cannot be pulled is named as the base of npx:// builds, with the ways around it", async () => {
  const failed = await runFails([
    `npx://${probeDir}`,
    "--name",
    "docker-nobase",
    "--runtime-image",
    "mcpmgr-test.invalid/no-such-base:1",
  ]);
  expect(failed.code).toBe(1);
  const errors = failed.err.split("\n").filter((line) => line.startsWith("[error]"));
  expect(errors).toHaveLength(1);
  expect(errors[0]).toContain("could not pull mcpmgr-test.invalid/no-such-base:1");
  expect(errors[0]).toContain("(the base image npx:// packages are built on)");
  expect(errors[0]).toContain("--runtime-image IMAGE");
  expect(errors[0]).toContain("MCPMGR_RUNTIME=process");
});

test("--ca-cert and --runtime-add-package reach the build (the CA is trusted in the image)", async () => {
  const dir = join(scratch, "ca");
  await cp(join(REPO_ROOT, "test/fixtures/sandbox-probe"), dir, { recursive: true });
  const made = Bun.spawnSync(
    [
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-subj",
      "/CN=mcpmgr-test-ca",
      "-days",
      "1",
      "-keyout",
      join(scratch, "ca.key"),
      "-out",
      join(scratch, "ca.pem"),
    ],
    { stderr: "pipe" },
  );
  expect(made.exitCode).toBe(0);
  const run = await runForeground([
    `npx://${dir}`,
    "--name",
    "docker-ca",
    "--runtime-image",
    NODE_BASE_IMAGE,
    "--ca-cert",
    join(scratch, "ca.pem"),
  ]);
  try {
    expect(await run.call("env", { name: "NODE_EXTRA_CA_CERTS" })).toBe(
      "/usr/local/share/ca-certificates/mcpmgr-ca.crt",
    );
    expect(await run.call("read_file", { path: "/etc/ssl/certs/ca-certificates.crt" })).toContain(
      (await Bun.file(join(scratch, "ca.pem")).text()).split("\n")[1] as string,
    );
    await run.client.close();
  } finally {
    await run.stop();
  }
  // A package manager the base image lacks is a build error with the build's own words.
  const failed = await runFails([
    `npx://${dir}`,
    "--name",
    "docker-addpkg",
    "--runtime-image",
    NODE_BASE_IMAGE,
    "--runtime-add-package",
    "git",
  ]);
  expect(failed.code).toBe(1);
  expect(failed.err).toContain("no apk, apt-get or microdnf");
  // The steps the failed build finished leave no untagged image behind.
  const stepImages = [...failed.err.matchAll(/---> ([0-9a-f]{12})\s*$/gm)].map((match) => match[1] as string);
  const last = stepImages.at(-1) as string;
  expect(stepImages.length).toBeGreaterThan(1);
  expect(docker("image", "inspect", last).code).not.toBe(0);
  for (const tag of builtImages("npx-ca")) docker("rmi", "-f", tag);
}, 600_000);
