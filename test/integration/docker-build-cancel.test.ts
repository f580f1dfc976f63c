/**
 * A package image build that is cancelled (Ctrl-C) or fails leaves none of its step images behind:
 * the classic builder commits an untagged image per step, and only a finished build's tag (and
 * the builder stage mcpmgr removes after it) accounted for them. A cancelled build's npm install
 * fetches a dependency from a server this test holds open, on the engine's bridge address, so the
 * cancel lands while a step runs, after earlier steps made their images.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { docker, fixtureImages } from "../support/docker-fixtures.ts";
import { NODE_BASE_IMAGE } from "../support/docker-images.ts";
import { until } from "../support/gateway-group.ts";
import { CLI_ENTRY, REPO_ROOT, spawnUntil } from "../support/processes.ts";

setDefaultTimeout(60_000);

let scratch: string;
let bridge: string;

beforeAll(async () => {
  await fixtureImages();
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-docker-build-cancel-"));
  // The build's containers reach the host at the default bridge's gateway.
  bridge = docker("network", "inspect", "bridge", "--format", "{{(index .IPAM.Config 0).Gateway}}").out;
}, 300_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** A copy of the probe whose one dependency is fetched from `url` during the build's npm install. */
async function projectFetching(name: string, url: string): Promise<string> {
  const dir = join(scratch, `${name}-${process.pid}`);
  await cp(join(REPO_ROOT, "test/fixtures/sandbox-probe"), dir, { recursive: true });
  const manifest = JSON.parse(await readFile(join(dir, "package.json"), "utf8"));
  await writeFile(join(dir, "package.json"), JSON.stringify({ ...manifest, dependencies: { "slow-dep": url } }));
  return dir;
}

/** The images the build's steps made, as its output names them (`---> ID`), but the base image's. */
function stepImages(output: string): string[] {
  const ids: string[] = [];
  let afterFrom = false;
  for (const line of output.split("\n")) {
    if (/Step \d+\/\d+ : FROM /.test(line)) afterFrom = true;
    const id = /---> ([0-9a-f]{12})\s*$/.exec(line)?.[1];
    if (id === undefined) continue;
    if (!afterFrom) ids.push(id);
    afterFrom = false;
  }
  return ids;
}

const exists = (image: string) => docker("image", "inspect", image).code === 0;

function builtImages(slug: string): string[] {
  const out = docker("images", "--format", "{{.Repository}}:{{.Tag}}", `mcpmgr-build/${slug}`).out;
  return out ? out.split("\n") : [];
}

for (const mode of ["foreground", "background"] as const) {
  test(`Ctrl-C during a build's npm install (run ${mode}): the images of the steps it finished are removed, nothing is tagged`, async () => {
    const asked: string[] = [];
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const server = Bun.serve({
      hostname: bridge,
      port: 0,
      async fetch(req) {
        asked.push(req.url);
        await held;
        return new Response("gone", { status: 503 });
      },
    });
    const slug = `cancelled-${mode}`;
    const dir = await projectFetching(slug, `http://${bridge}:${server.port}/slow-dep.tgz`);
    // A background run (no --foreground) shows its supervisor's build output while it waits for the start.
    const args = mode === "foreground" ? ["--foreground"] : [];
    const run = await spawnUntil(
      [
        process.execPath,
        CLI_ENTRY,
        "run",
        ...args,
        `npx://${dir}`,
        "--runtime-image",
        NODE_BASE_IMAGE,
        "--name",
        `docker-build-${slug}`,
      ],
      /building mcpmgr-build\//,
      { env: { MCPMGR_RUNTIME: "docker" }, timeoutMs: 240_000 },
    );
    try {
      expect(await until(() => asked.length > 0, 240_000)).toBe(true);
      expect(await until(() => stepImages(run.output()).length > 0)).toBe(true);
      const made = stepImages(run.output());
      expect(await run.stop("SIGINT")).toBe(130);
      for (const image of made) expect(exists(image)).toBe(false);
      expect(builtImages(`npx-${slug}-${process.pid}`)).toEqual([]);
    } finally {
      release();
      await run.stop("SIGKILL");
      await server.stop(true);
    }
  }, 300_000);
}

test("a build that fails (the package's entry is not there): the images of the steps it finished are removed too", async () => {
  const dir = join(scratch, `failing-${process.pid}`);
  await cp(join(REPO_ROOT, "test/fixtures/sandbox-probe"), dir, { recursive: true });
  const manifest = JSON.parse(await readFile(join(dir, "package.json"), "utf8"));
  await writeFile(
    join(dir, "package.json"),
    JSON.stringify({ ...manifest, bin: { "mcpmgr-sandbox-probe": "gone.mjs" } }),
  );
  const run = Bun.spawnSync(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "--foreground",
      `npx://${dir}`,
      "--runtime-image",
      NODE_BASE_IMAGE,
      "--name",
      "docker-build-fail",
    ],
    { cwd: REPO_ROOT, env: { ...process.env, MCPMGR_RUNTIME: "docker", NO_COLOR: "1" }, timeout: 120_000 },
  );
  const output = `${run.stdout.toString()}${run.stderr.toString()}`;
  expect(output).toContain("does not exist");
  const made = stepImages(output);
  expect(made.length).toBeGreaterThan(0);
  for (const image of made) expect(exists(image)).toBe(false);
}, 300_000);
