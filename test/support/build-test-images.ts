/**
 * Builds the Docker base images the container tests use (test/support/docker-images.ts)
 * ahead of `bun test`, so the first test that needs one does not spend its timeout
 * building it. Run as `bun test/support/build-test-images.ts`; a no-op when they exist.
 */
import { dockerAvailable, ensureTestImages, GO_BASE_IMAGE, NODE_BASE_IMAGE } from "./docker-images.ts";

if (!(await dockerAvailable())) {
  console.error("build-test-images: no Docker engine answers `docker info`");
  process.exit(1);
}
const started = performance.now();
const built = await ensureTestImages();
const seconds = ((performance.now() - started) / 1000).toFixed(1);
for (const tag of [NODE_BASE_IMAGE, GO_BASE_IMAGE]) {
  console.log(`build-test-images: ${tag} ${built.includes(tag) ? `built (${seconds}s)` : "already present"}`);
}
