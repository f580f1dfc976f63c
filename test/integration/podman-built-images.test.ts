/**
 * Podman's builds of a package are removed as Docker's are (runtime/docker/superseded-images.ts). Podman names
 * a local build `localhost/<repository>` in its list, and (4.3) answers a list filtered by several labels with
 * nothing at all: asked as Docker is, it removed none, and its builds piled up. Still never another
 * installation's, nor the one kept. Real Podman on a socket of the test's own; the images are empty ones
 * built from scratch (no base image, no network).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { detectEngine } from "../../src/runtime/docker/engine.ts";
import { removeBuiltTags } from "../../src/runtime/docker/superseded-images.ts";
import { type PodmanService, startPodmanService } from "../support/podman-service.ts";

setDefaultTimeout(60_000);

let podman: PodmanService;
let dir: string;
let socket: string;
const repository = `mcpmgr-build/npx-podman-pruned-${process.pid}`;

beforeAll(async () => {
  podman = await startPodmanService("mcpmgr-podman-built-images-");
  ({ dir, socket } = podman);
});
afterAll(async () => {
  for (const tag of ["old", "kept", "foreign"]) Bun.spawnSync(["podman", "rmi", "-f", `${repository}:${tag}`]);
  await podman.stop();
});

/** An empty image tagged `<repository>:<tag>`, labelled as mcpmgr labels its builds, for installation `install`. */
function build(tag: string, install: string): void {
  const context = join(dir, `context-${tag}`);
  mkdirSync(context, { recursive: true });
  // A label of its own: each tag is an image of its own, not one image with three tags.
  writeFileSync(join(context, "Dockerfile"), `FROM scratch\nLABEL test.tag=${tag}\n`);
  const labels = ["mcpmgr=true", "mcpmgr.role=build", `mcpmgr.install=${install}`];
  const args = [
    "podman",
    "build",
    "-q",
    ...labels.flatMap((label) => ["--label", label]),
    "-t",
    `${repository}:${tag}`,
  ];
  expect(Bun.spawnSync([...args, context]).exitCode).toBe(0);
}

function tags(): string[] {
  const out = Bun.spawnSync(["podman", "images", "--format", "{{.Repository}}:{{.Tag}}", repository]);
  return out.stdout.toString().trim().split("\n").filter(Boolean).sort();
}

test("this installation's earlier build goes on Podman; the one kept and another installation's stay", async () => {
  build("old", "this-installation");
  build("kept", "this-installation");
  build("foreign", "another-installation");
  const engine = await detectEngine({ env: { CONTAINER_HOST: `unix://${socket}` }, want: "podman" });
  expect(engine?.kind).toBe("podman");
  const removed = await removeBuiltTags(
    engine as NonNullable<typeof engine>,
    repository,
    "this-installation",
    `${repository}:kept`,
  );
  expect(removed).toEqual([`${repository}:old`]);
  expect(tags()).toEqual([`localhost/${repository}:foreign`, `localhost/${repository}:kept`]);
});
