/**
 * Pulling: a real registry (Debian's docker-registry, the CNCF distribution server) on
 * loopback, which Docker trusts over plain HTTP. An image with a layer of its own is pushed
 * there and removed locally; `mcpmgr run` then pulls it with progress, and a second run uses
 * the local image without pulling. With --image-verification enabled, the reference pinned
 * by digest is pulled, verified and run, while the tag alone is refused.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { docker, fixtureImages, runInDocker, runInDockerFails } from "../support/docker-fixtures.ts";
import { freePort } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let dir: string;
let registry: ReturnType<typeof Bun.spawn>;
let tagged: string;
let pinned: string;

beforeAll(async () => {
  const images = await fixtureImages();
  dir = mkdtempSync(join(tmpdir(), "mcpmgr-registry-"));
  const port = await freePort();
  const config = join(dir, "config.yml");
  writeFileSync(
    config,
    `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, "data")}\nhttp:\n  addr: 127.0.0.1:${port}\n`,
  );
  registry = Bun.spawn(["docker-registry", "serve", config], { stdout: "ignore", stderr: "pipe" });
  const deadline = Date.now() + 60_000;
  while (!(await fetch(`http://127.0.0.1:${port}/v2/`).catch(() => undefined))?.ok) {
    if (registry.exitCode !== null)
      throw new Error(`docker-registry exited: ${await new Response(registry.stderr as ReadableStream).text()}`);
    if (Date.now() > deadline) throw new Error("docker-registry did not answer on /v2/ within 60 s");
    await Bun.sleep(100);
  }

  // A layer only this image has, so the pull really downloads something.
  tagged = `127.0.0.1:${port}/mcpmgr-test/pulled:1`;
  const dockerfile = `FROM ${images.conformance}\nRUN ["/bin/busybox", "sh", "-c", "echo ${crypto.randomUUID()} > /app/layer-of-its-own"]\n`;
  const built = Bun.spawnSync(["docker", "build", "-q", "-t", tagged, "-"], {
    stdin: Buffer.from(dockerfile),
    stdout: "pipe",
    stderr: "pipe",
  });
  if (built.exitCode !== 0) throw new Error(`docker build failed: ${built.stderr.toString()}`);
  const pushed = docker("push", tagged);
  if (pushed.code !== 0) throw new Error(`docker push failed: ${pushed.err}`);
  pinned = docker("inspect", tagged, "--format", "{{index .RepoDigests 0}}").out;
  expect(pinned).toMatch(/@sha256:[0-9a-f]{64}$/);
  expect(docker("rmi", tagged).code).toBe(0);
}, 300_000);

afterAll(async () => {
  docker("rmi", "-f", tagged, pinned);
  registry?.kill();
  await registry?.exited;
  rmSync(dir, { recursive: true, force: true });
});

test("a missing image is pulled with progress shown; the next run uses it without pulling", async () => {
  expect(docker("image", "inspect", tagged).code).not.toBe(0);
  const first = await runInDocker([tagged, "--name", "docker-pulled", "--image-verification", "disabled"]);
  try {
    const log = first.output();
    expect(log).toContain(`pulling ${tagged}`);
    expect(log).toMatch(/Pulling from mcpmgr-test\/pulled/);
    expect(log).toMatch(/Downloaded newer image|Download complete|Pull complete/);
    expect((await first.client.listTools()).tools.length).toBeGreaterThan(0);
    await first.client.close();
  } finally {
    await first.stop();
  }
  const second = await runInDocker([tagged, "--name", "docker-pulled", "--image-verification", "disabled"]);
  try {
    expect(second.output()).not.toContain("pulling");
    await second.client.close();
  } finally {
    await second.stop();
  }
}, 300_000);

test("--image-verification enabled: pinned by digest, pulled and run; the tag alone is refused", async () => {
  docker("rmi", "-f", tagged, pinned);
  const verified = await runInDocker([pinned, "--name", "docker-pulled-pinned", "--image-verification", "enabled"]);
  try {
    expect(verified.output()).toContain(`pulling ${pinned}`);
    expect((await verified.client.listTools()).tools.length).toBeGreaterThan(0);
    await verified.client.close();
  } finally {
    await verified.stop();
  }
  const refused = await runInDockerFails([tagged, "--name", "docker-pulled-tag", "--image-verification", "enabled"]);
  expect(refused.code).not.toBe(0);
  expect(refused.err).toContain("image verification failed");
}, 300_000);
