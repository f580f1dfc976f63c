/**
 * Tags of a package's build repository (`mcpmgr-build/<scheme>-<name>`) removed from the engine: only images
 * mcpmgr built (`mcpmgr=true`, role `build`) and labelled with this installation's id, never another
 * installation's (S9) or one built before images carried the id. Removing a tag only untags an image that has
 * others; the engine refuses to remove one a container (running or not) uses, and that one stays, silently.
 */
import type { ContainerEngine } from "./engine.ts";
import { INSTALL_LABEL, MANAGED_LABEL, ROLE_LABEL } from "./labels.ts";

/** Removes this installation's tags of `repository` but `keep`; returns the tags removed. */
export async function removeBuiltTags(
  engine: ContainerEngine,
  repository: string,
  install: string,
  keep?: string,
): Promise<string[]> {
  let images: { RepoTags?: string[] | null }[];
  try {
    images = await engine.docker.listImages({
      filters: JSON.stringify({
        reference: [repository],
        label: [`${MANAGED_LABEL}=true`, `${ROLE_LABEL}=build`, `${INSTALL_LABEL}=${install}`],
      }),
    });
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const image of images) {
    for (const tag of image.RepoTags ?? []) {
      // The reference filter also matches other registries' names ending the same way: this repository only.
      if (tag === keep || tag.slice(0, tag.lastIndexOf(":")) !== repository) continue;
      try {
        await engine.docker.getImage(tag).remove();
        removed.push(tag);
      } catch {
        // In use by a container, or gone already: the engine's to keep.
      }
    }
  }
  return removed;
}
