/**
 * What a package image build leaves in the engine, removed: the classic builder commits an untagged
 * image for every step, kept for good unless a tag holds them. After a successful build only the
 * earlier stages' images are loose (the final stage's are the tagged image's parents); after a
 * failed or cancelled one, every step image it made is. Only images this build made are touched: the
 * ones its output named and their untagged descendants made since it began (a step committed after
 * a cancel closed the output), never one a tag or another image still holds.
 */
import type { ContainerEngine } from "./engine.ts";

/** How long a cancelled build may take to stop its step's container (within a supervisor's 10 s to wind down a start). */
const STOP_WAIT_MS = 8_000;

/** Untagged images only; one the engine keeps for another reason (a child, a container) stays, silently. */
export async function removeStageImages(engine: ContainerEngine, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    try {
      const info = await engine.docker.getImage(id).inspect();
      if ((info.RepoTags ?? []).some((tag) => tag !== "<none>:<none>")) continue;
      await engine.docker.getImage(id).remove();
    } catch {
      // Gone already, or still in use: it is the engine's to keep then.
    }
  }
}

/**
 * After a failed or cancelled build: `made` (the step images its output named) and what was built
 * on them since `startedAt` (ms since the epoch). A cancelled build may still be running its step in
 * `container` (the engine stops it once it sees the request closed): that is waited for first, as the
 * step's image is in use until then and the step may yet commit one more.
 */
export async function removeBuildLeftovers(
  engine: ContainerEngine,
  made: readonly string[],
  startedAt: number,
  container: string | undefined,
): Promise<void> {
  if (made.length === 0) return;
  if (container !== undefined) await containerGone(engine, container);
  const descendants = await untaggedDescendants(engine, made, startedAt);
  // The newest first: an image with a child cannot be removed before it.
  await removeStageImages(engine, [...descendants.reverse(), ...[...made].reverse()]);
}

async function containerGone(engine: ContainerEngine, id: string): Promise<void> {
  const deadline = performance.now() + STOP_WAIT_MS;
  while (performance.now() < deadline) {
    try {
      await engine.docker.getContainer(id).inspect();
    } catch {
      return; // gone (or the engine no longer answers: nothing more to wait for)
    }
    await Bun.sleep(100);
  }
}

/** Untagged images created since `startedAt` whose parent chain reaches one of `made`, oldest first. */
async function untaggedDescendants(
  engine: ContainerEngine,
  made: readonly string[],
  startedAt: number,
): Promise<string[]> {
  let images: { Id: string; ParentId?: string; RepoTags?: string[] | null; Created: number }[];
  try {
    images = await engine.docker.listImages({ all: true });
  } catch {
    return [];
  }
  const ours = (id: string) => made.some((short) => bare(id).startsWith(short) || short.startsWith(bare(id)));
  const known = new Set(images.filter((image) => ours(image.Id)).map((image) => image.Id));
  const found: string[] = [];
  const candidates = images
    .filter((image) => image.Created * 1000 >= startedAt - 1000)
    .filter((image) => (image.RepoTags ?? []).every((tag) => tag === "<none>:<none>"))
    .sort((a, b) => a.Created - b.Created);
  for (let grew = true; grew; ) {
    grew = false;
    for (const image of candidates) {
      if (known.has(image.Id) || image.ParentId === undefined || !known.has(image.ParentId)) continue;
      known.add(image.Id);
      found.push(image.Id);
      grew = true;
    }
  }
  return found;
}

function bare(id: string): string {
  return id.replace(/^sha256:/, "");
}
